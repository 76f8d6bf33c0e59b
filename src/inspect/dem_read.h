/* The .dem reader's parts (internal to src/inspect/): dem.c reads the lines
 * into the model and checks what they declare; dem_fields.c splits a line
 * into fields, reads its numbers and declared counts, and keeps the
 * author's loader's rules (dem.c's head comment). */
#ifndef MESHFS_INSPECT_DEM_READ_H
#define MESHFS_INSPECT_DEM_READ_H

#include <stddef.h>
#include <stdint.h>

#include "readers.h"

#define MAX_TOK 24
#define NUM_BUF 64
#define V_NUMBERS 12
#define V_SKINNED 14
#define DEFAULT_COMPONENTS 9

typedef struct tok {
    const char *s;
    size_t n;
} tok;

typedef struct line {
    unsigned no;
    tok t[MAX_TOK];
    unsigned nt;       /* tokens kept (at most MAX_TOK) */
    unsigned all;      /* tokens on the line */
    const char *rest;  /* text after the keyword and one space */
    size_t rest_n;
} line;

/* Which element lines may follow. */
typedef enum section {
    SEC_NONE, SEC_VERTS, SEC_TRIS, SEC_WEIGHTS, SEC_SJOINTS, SEC_BOUNDS, SEC_EVENTS,
    SEC_FRAMES,
} section;

/* A declared count and the element lines that followed it. */
typedef struct count {
    int64_t declared; /* -1: keyword absent */
    unsigned line;
    uint64_t lines;
} count;

typedef struct dem_mesh {
    int open;
    char name[MFS_SUMMARY_NAME_LEN];
    int has_mat;
    count verts, tris, weights;
    int v_form;               /* 0 unknown, 12 or 14 numbers */
    int t_form;               /* 0 unknown, 3 or 4 ints */
    int64_t max_index;        /* largest t index */
    unsigned max_index_line;
    uint32_t *refs;           /* startWeight, countWeight per vertex (v_form 14) */
    size_t cap_refs;
    float *bias;              /* per w line */
    size_t cap_bias;
    mfs_tally badnormal, zeronormal, nonfinite;
} dem_mesh;

typedef struct dem_seq {
    int open;
    char name[MFS_SUMMARY_NAME_LEN];
    int64_t components;
    count joints, bounds, events, frames;
    uint64_t bad_f;
    unsigned first_bad_f;
    int64_t max_e_frame; /* events may precede the frames count */
    unsigned max_e_line;
} dem_seq;

/* The loader's rules (see the top of this file), each reported once as a
 * violation at its first breach, with a count of the rest at the end. */
typedef enum rule {
    R_SPACING,   /* empty token: leading, trailing or doubled space */
    R_CONTROL,   /* tab or other control byte: not a separator for the loader */
    R_EMPTY,     /* empty line: the loader reads the first token of nothing */
    R_HEADER,    /* header other than exactly `DEM 10` */
    R_FLOAT,     /* number std::stof throws on (subnormal, out of float range) */
    R_INT,       /* integer std::stoi / std::stoul throws on (out of range) */
    R_NAME,      /* name of more than one word */
    R_TRI3,      /* `t` line without its polygon index */
    R_COUNT
} rule;

typedef struct dem {
    mfs_rd *r;
    uint64_t broken[R_COUNT]; /* lines breaking each rule */
    unsigned broken_first[R_COUNT];
    int header;
    int model_lines;
    count joints, meshes, sequences;
    uint64_t mesh_blocks, seq_blocks;
    int64_t max_joint; /* largest joint index in w lines, -1 none */
    unsigned max_joint_line;
    section sec;
    int in_seq;
    dem_mesh m;
    dem_seq q;
} dem;

/* ---- dem_fields.c ---- */

/* The first breach of rule k becomes a violation (message from fmt, "line
 * N: " in front); later ones are only counted, and dem_loader_totals warns
 * of them at the end. */
void dem_loader_rule(dem *d, rule k, unsigned no, const char *fmt, ...) MFS_PRINTF(4, 5);
void dem_loader_totals(dem *d);
/* Spacing and bytes of the raw line (CR already cut). */
void dem_check_raw_line(dem *d, const char *s, size_t n, unsigned no);

/* The line's tokens (runs of spaces and tabs split them) and the text
 * after its keyword. */
void dem_split(line *l, const char *s, size_t n);
int dem_tok_is(tok t, const char *lit);
/* 0 with *out, or -1 when t is not an integer. */
int dem_parse_i(tok t, int64_t *out);
/* Reads k numbers from tokens first.. : ints[j] is 'i' for an integer the
 * loader reads with stoi, 'u' for one it reads with stoul, else a float. */
int dem_numbers(dem *d, const line *l, unsigned first, unsigned k, double *out,
                const char *ints);
/* A name line (`model`, `mesh`, `mat`, `sequence`): the loader keeps only
 * the first token after the keyword. */
void dem_single_word(dem *d, const line *l, unsigned words);
/* -1 with err unless the line has exactly k fields after its keyword. */
int dem_want_fields(dem *d, const line *l, unsigned k);

/* A count line into c (its element lines now follow: d->sec), and at the
 * block's end, whether the lines that followed match it. */
int dem_set_count(dem *d, const line *l, count *c, section sec);
void dem_check_count(dem *d, const char *owner, const count *c, const char *kw,
                     const char *elem);

#endif

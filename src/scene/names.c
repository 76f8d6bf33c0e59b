/* Names as UTF-8 (include/meshfs/scene.h, mfs_scene_names_utf8).
 *
 * Importers hand names over as the file's bytes.  Text formats (.fmi,
 * .dem, the package's names) must be UTF-8, and tools of the 3ds Max era
 * wrote names in the machine's 8-bit code page: an MD5 file's
 * "01 - Par d\xe9faut".  A name that is not strict UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF) is read as
 * Latin-1, every byte the code point of its value, which is right for
 * Latin-1 text and gives valid UTF-8 for any bytes.  A leading byte-order
 * mark is dropped.  Other valid names are kept byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/scene.h"

/* Length of the strict UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t seq_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

int mfs_utf8_valid(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = seq_len(p);
        if (!n)
            return 0;
        p += n;
    }
    return 1;
}

typedef struct fixer {
    int count;
    char first[128]; /* the first name read as Latin-1, as it now reads */
    int oom;
} fixer;

static void noted(fixer *f, const char *name)
{
    if (f->count++ == 0) {
        /* cut on a character's start, so the note is UTF-8 too */
        size_t k = strlen(name) < sizeof f->first - 1 ? strlen(name) : sizeof f->first - 1;
        while (k && ((unsigned char)name[k] & 0xc0) == 0x80)
            k--;
        memcpy(f->first, name, k);
        f->first[k] = '\0';
    }
}

/* A byte-order mark is an encoding's signature, not part of a name, and at
 * the start of a text view (.fmi's first line) it hides the first key from
 * FGE's reader (docs/formats/fmi.md). */
static void drop_bom(fixer *f, char *name)
{
    size_t k = 0;
    while (strncmp(name + k, "\xef\xbb\xbf", 3) == 0)
        k += 3;
    if (k) {
        memmove(name, name + k, strlen(name + k) + 1);
        noted(f, name);
    }
}

static void fix(fixer *f, char **name)
{
    if (!*name)
        return;
    if (mfs_utf8_valid(*name)) {
        drop_bom(f, *name);
        return;
    }
    const unsigned char *p = (const unsigned char *)*name;
    size_t n = strlen(*name);
    char *out = malloc(2 * n + 1), *o = out;
    if (!out) {
        f->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80) {
            *o++ = (char)p[i];
        } else {
            *o++ = (char)(0xc0 | (p[i] >> 6));
            *o++ = (char)(0x80 | (p[i] & 0x3f));
        }
    }
    *o = '\0';
    free(*name);
    *name = out;
    noted(f, out);
}

int mfs_scene_names_utf8(mfs_scene *s, mfs_err *err)
{
    fixer f = {0};
    for (uint32_t i = 0; i < s->n_nodes; i++)
        fix(&f, &s->nodes[i].name);
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        fix(&f, &s->meshes[i].name);
        for (uint32_t b = 0; b < s->meshes[i].n_bones; b++)
            fix(&f, &s->meshes[i].bones[b].name); /* as its node's: the same rule */
    }
    for (uint32_t i = 0; i < s->n_materials; i++) {
        fix(&f, &s->materials[i].name);
        for (int t = 0; t < MFS_TEX_KINDS; t++)
            fix(&f, &s->materials[i].textures[t]);
    }
    for (uint32_t i = 0; i < s->n_animations; i++)
        fix(&f, &s->animations[i].name);
    if (f.oom)
        return mfs_errf(err, "out of memory converting names to UTF-8");
    if (f.count) {
        char note[256];
        snprintf(note, sizeof note,
                 "%d name%s made UTF-8 (read as Latin-1, or a leading byte-order mark dropped; the "
                 "first: '%s')",
                 f.count, f.count == 1 ? "" : "s", f.first);
        if (mfs_scene_note(s, note) < 0)
            return mfs_errf(err, "out of memory");
    }
    return f.count;
}

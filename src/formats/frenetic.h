/* Naming rules the Frenetic engine applies, shared by the .fmd and .fmi
 * writers so that both files always agree (internal to src/formats/). */
#ifndef MESHFS_FORMATS_FRENETIC_H
#define MESHFS_FORMATS_FRENETIC_H

/* Case-insensitive (ASCII) prefix test, as FGE compares lowercased names. */
int mfs_fge_has_prefix(const char *s, const char *prefix);

/* FGE's ModelHandler makes these meshes invisible: collisionconvex_,
 * collisioncomplex_, marker_, norender_. */
int mfs_fge_hidden(const char *name);

/* The mesh name as .fmd and .fmi carry it: '=', CR, LF and every ':' of a
 * run of three or more become '_' (they would break an .fmi line or read as
 * a texture type).  malloc'd; NULL on out of memory. */
char *mfs_fge_mesh_name(const char *name);

#endif

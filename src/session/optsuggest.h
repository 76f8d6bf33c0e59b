/* meshfs's own message for the -o options libfuse refused (main.c): each
 * named, with the closest known option ("did you mean formats=?"), and a
 * format name that followed a comma inside formats= gets the separator
 * hint, since libfuse split `-o formats=gmf,dem' into formats=gmf and dem. */
#ifndef MESHFS_FS_OPTSUGGEST_H
#define MESHFS_FS_OPTSUGGEST_H

/* libfuse frees the arguments it refuses, so the caller keeps a copy of
 * what it handed libfuse (argv[0] is the program) and says which single
 * option libfuse refuses: `refused(opt, ctx)` is 1 for those.  `known`:
 * meshfs's option names, NULL-terminated, each as its fuse_opt template
 * ("formats=%s", "hide_sources"); `formats`: -o formats= as given, or NULL.
 * Writes one line per refused option to stderr; returns how many. */
int mfs_unknown_options_say(int argc, char **argv, int (*refused)(const char *opt, void *ctx),
                            void *ctx, const char *const *known, const char *formats);

#endif

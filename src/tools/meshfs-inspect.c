/* meshfs-inspect: reads meshfs output files with the strict readers of
 * src/inspect/ and prints what they hold (docs/inspect.md). */
#include <stdio.h>
#include <string.h>

#include "inspect_settings.h"
#include "meshfs/inspect.h"
#include "meshfs/util.h"

static void usage(FILE *f)
{
    fputs("usage: meshfs-inspect [--check] [--json] [-q] FILE...\n"
          "       meshfs-inspect --settings SRC MODEL...\n"
          "Reads .fmd .fmi .gmf/.mdl .dem .vrt .tri .sph .tex files, LGE packages (.lgepkg)\n"
          "and chunks (.lge) strictly, and prints a summary.\n"
          "  --check        also verify the format's invariants and the target engine's\n"
          "                 loading rules (a rotated limb fails a .gmf, only warns in a\n"
          "                 .mdl); a violation fails the file, a file that passes gets a\n"
          "                 line 'FILE: ok'\n"
          "  --json         one JSON object per file, one per line (fields: docs/inspect.md)\n"
          "  --settings SRC MODEL is a model beneath the source folder SRC: print the keys\n"
          "                 its settings files set and where each came from\n"
          "                 (docs/settings.md)\n"
          "  -q, --quiet    nothing on stdout: the exit status, and the errors on stderr\n"
          "  -h, --help     this text\n"
          "  -V, --version  meshfs's, the formats' and the libraries' versions\n"
          "Exit status: 0 all files read (and checked), 1 any file failed, 2 usage.\n",
          f);
}

int main(int argc, char **argv)
{
    int check = 0, json = 0, quiet = 0, nfiles = 0, options = 1;
    const char *settings_src = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options || a[0] != '-' || a[1] == '\0') {
            nfiles++;
        } else if (strcmp(a, "--") == 0) {
            options = 0;
        } else if (strcmp(a, "--check") == 0) {
            check = 1;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--settings") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "meshfs-inspect: --settings needs the source folder SRC\n");
                return 2;
            }
            settings_src = argv[++i];
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            mfs_version_print(stdout, "meshfs-inspect", 0);
            return 0;
        } else {
            fprintf(stderr, "meshfs-inspect: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (nfiles == 0) {
        usage(stderr);
        return 2;
    }

    int failed = 0;
    options = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) {
            options = 0;
            continue;
        }
        if (options && a[0] == '-' && a[1] != '\0') {
            i += strcmp(a, "--settings") == 0;
            continue;
        }
        mfs_err err;
        if (settings_src) {
            if (mfs_inspect_settings(settings_src, a, quiet ? NULL : stdout, &err) < 0) {
                fflush(stdout);
                fprintf(stderr, "meshfs-inspect: %s\n", err.msg);
                failed = 1;
            }
            continue;
        }
        mfs_summary s;
        int rc = mfs_inspect_file(a, check, &s, &err);
        failed |= rc != 0;
        if (json && !quiet) {
            mfs_summary_json(stdout, a, &s, rc ? err.msg : NULL);
        } else if (!json) {
            if (s.format[0] && !quiet)
                mfs_summary_print(stdout, a, &s);
            /* the verdict, not only the exit status (one for all files) */
            if (check && !rc && !quiet)
                printf("%s: ok\n", a);
            if (rc) {
                fflush(stdout);
                fprintf(stderr, "meshfs-inspect: %s\n", err.msg);
            }
        }
    }
    if (fflush(stdout) != 0)
        return 1;
    return failed ? 1 : 0;
}

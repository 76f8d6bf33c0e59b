#!/usr/bin/env python3
"""One owner of state (docs/architecture.md, "State and threads"): no file
of the mount daemon (src/session/, src/mount/, src/coherence/ and
src/names/ by default, or the folders given) keeps mutable state in a
static.  Constants, per-thread variables (_Thread_local) and
functions are fine; the statics allowed below say why in their own file.
Prints each other one as FILE:LINE: TEXT and exits 1 if there is any."""
import os
import re
import sys

# (file, name): the reason is at the declaration
ALLOWED = {
    ("session/main.c", "unknown_option_seen"),  # libfuse's log callback takes no context
    ("session/main.c", "fs"),                   # main()'s mfs_fs: the owner itself
}

# the daemon's folders (docs/architecture.md, "Layers")
DAEMON = ("session", "mount", "coherence", "names")

DECL = re.compile(r"^\s*static\s+(?!const\b)(?!_Thread_local\b)(?!inline\b)([^(]*?)(\w+)\s*(\[[^]]*\])?\s*[;=]")
STRUCT = re.compile(r"^\s*static\s+(?:struct|union)\s*\w*\s*\{")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "src")
    folders = sys.argv[1:] or [os.path.join(src, d) for d in DAEMON]
    found, files = [], 0
    for folder in folders:
        # a folder renamed away would pass unseen: each must be there
        if not os.path.isdir(folder):
            print(f"{folder}: no such folder")
            return 1
        here_name = os.path.basename(os.path.normpath(folder))
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".c"):
                continue
            files += 1
            key = f"{here_name}/{name}"
            with open(os.path.join(folder, name)) as f:
                for no, line in enumerate(f, 1):
                    m = DECL.match(line)
                    if m and (key, m.group(2)) not in ALLOWED:
                        found.append(f"{key}:{no}: {line.strip()}")
                    elif STRUCT.match(line):
                        found.append(f"{key}:{no}: {line.strip()}")
    for f in found:
        print(f)
    names = ", ".join(os.path.basename(os.path.normpath(f)) for f in folders)
    print(f"{len(found)} statics holding mutable state in {files} files of {names}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

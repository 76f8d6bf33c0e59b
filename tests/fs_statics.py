#!/usr/bin/env python3
"""One owner of state (docs/architecture.md, "State and threads"): no file
of the mount daemon (src/fs/ by default, or the folder given) keeps mutable
state in a static.  Constants, per-thread variables (_Thread_local) and
functions are fine; the statics allowed below say why in their own file.
Prints each other one as FILE:LINE: TEXT and exits 1 if there is any."""
import os
import re
import sys

# (file, name): the reason is at the declaration
ALLOWED = {
    ("main.c", "unknown_option_seen"),  # libfuse's log callback takes no context
    ("main.c", "fs"),                   # main()'s mfs_fs: the owner itself
}

DECL = re.compile(r"^\s*static\s+(?!const\b)(?!_Thread_local\b)(?!inline\b)([^(]*?)(\w+)\s*(\[[^]]*\])?\s*[;=]")
STRUCT = re.compile(r"^\s*static\s+(?:struct|union)\s*\w*\s*\{")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src", "fs")
    found = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(folder, name)) as f:
            for no, line in enumerate(f, 1):
                m = DECL.match(line)
                if m and (name, m.group(2)) not in ALLOWED:
                    found.append(f"{name}:{no}: {line.strip()}")
                elif STRUCT.match(line):
                    found.append(f"{name}:{no}: {line.strip()}")
    for f in found:
        print(f)
    print(f"{len(found)} statics holding mutable state in {os.path.normpath(folder)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

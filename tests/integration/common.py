"""Shared helpers for meshfs's integration tests (python3 unittest).

The tests drive the real binaries from the build directory (env MESHFS_BUILD,
set by meson) on real models: Debian's assimp-testmodels under
/usr/share/assimp/models, the project's own examples/assets, and files the
tests make themselves."""
import json
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("MESHFS_BUILD", os.path.join(SOURCE, "build"))
SHARED = os.environ.get("MESHFS_SHARED", os.path.join(os.path.dirname(SOURCE), "shared"))
CORPUS = "/usr/share/assimp/models"
FORMATS = ["fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex"]


def tool(name):
    return os.path.join(BUILD, name)


def sanitizer_build():
    """Whether the build under test is sanitized (ASan): its workers run
    without an address-space cap, which ASan's shadow memory would hit."""
    p = run([tool("meshfs-worker"), "--sandbox-status"], check=True)
    return "sanitizer build: yes" in p.stdout.splitlines()


def tsan_run():
    """Whether this is scripts/test's ThreadSanitizer run (mount.py reads
    its reports): a daemon several times slower, whose timing windows are
    wider than the plain one's."""
    return bool(os.environ.get("MESHFS_TSAN_LOG"))


def run(args, timeout=900, check=False):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def convert(inputs, outdir, *opts, report=True, timeout=900):
    """Runs meshfs-convert; returns (process, [report rows])."""
    args = [tool("meshfs-convert"), "-q", "-o", outdir]
    # converted afresh, not served from a cache an earlier run (or build) filled
    if "--cache-dir" not in opts and "--no-cache" not in opts:
        args.append("--no-cache")
    rpath = os.path.join(outdir, ".report.json") if report else None
    if rpath:
        os.makedirs(outdir, exist_ok=True)
        args += ["--report", rpath]
    args += list(opts) + list(inputs)
    p = run(args, timeout=timeout)
    rows = []
    if rpath and os.path.exists(rpath):
        with open(rpath) as f:
            rows = [json.loads(l) for l in f]
    return p, rows


def inspect(paths, check=True):
    """meshfs-inspect --json over paths; returns {path: summary dict}."""
    out = {}
    paths = list(paths)
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        args = [tool("meshfs-inspect"), "--json"] + (["--check"] if check else []) + chunk
        p = run(args)
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        if len(rows) != len(chunk):
            raise AssertionError(f"meshfs-inspect printed {len(rows)} rows for {len(chunk)} files:\n"
                                 f"{p.stdout}\n{p.stderr}")
        for path, row in zip(chunk, rows):
            out[path] = row
    return out


def tree_bytes(root):
    """{relative path: bytes} of every file under root (hidden files skipped)."""
    res = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for f in files:
            if f.startswith("."):
                continue
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                res[os.path.relpath(p, root)] = fh.read()
    return res


def mount_refused(src, mnt, options):
    """`meshfs -f -o OPTIONS SRC MNT`, which the test expects to refuse: its
    CompletedProcess (unmounted again should it have mounted after all)."""
    try:
        return subprocess.run([tool("meshfs"), "-f", "-o", options, src, mnt],
                              capture_output=True, text=True, timeout=30)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])


def tmp_leftovers(cache):
    """What conversions left in the cache's tmp/ besides the job folders a
    mount or run keeps for its next conversions (include/meshfs/convert.h),
    which may hold only empty output files: [] when nothing else."""
    left = []
    tmp = os.path.join(cache, "tmp")
    for name in sorted(os.listdir(tmp)):
        p = os.path.join(tmp, name)
        if not name.startswith("job-") or os.path.islink(p) or not os.path.isdir(p):
            left.append(name)
            continue
        for f in sorted(os.listdir(p)):
            q = os.path.join(p, f)
            if os.path.islink(q) or not os.path.isfile(q) or os.path.getsize(q):
                left.append(os.path.join(name, f))
    return left


def settle(*folders):
    """Waits until each folder's newest time (mtime, ctime) is 100 ms old.
    The mount keeps no listing of a folder changed within a tick of its
    clock (a change in the same tick would not move its times), so a test
    that counts kept listings lets the folders it made settle first
    (docs/listing.md, "Listings the kernel keeps")."""
    import time
    for f in folders:
        st = os.stat(f)
        newest = max(st.st_mtime_ns, st.st_ctime_ns)
        wait = newest + 100_000_000 - time.time_ns()
        if wait > 0:
            time.sleep(wait / 1e9)


def tempdir():
    """A temporary folder others may enter: as root, a conversion of a
    root-owned model runs as the worker user, which must be able to enter
    SRC itself (docs/security.md, "Which user"), and many tests use such a
    folder as SRC."""
    t = tempfile.TemporaryDirectory(prefix="meshfs-test-")
    os.chmod(t.name, 0o755)
    return t


class TreeCase(unittest.TestCase):
    """A test with a private temporary folder: self.tmp, and the paths of a
    source tree, a mount point and a cache in it (self.src, self.mnt,
    self.cache; none created), removed after the test."""

    def setUp(self):
        self._tmp = tempdir()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")


def run_tests():
    """unittest.main for meson: exit 77 (skipped) when every test skipped,
    e.g. because the shared reference files are not on this machine."""
    import sys
    import unittest
    res = unittest.main(exit=False, verbosity=2).result
    if not res.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if res.testsRun == len(res.skipped) else 0)

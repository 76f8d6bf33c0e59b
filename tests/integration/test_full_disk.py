"""Full disks under meshfs-convert and meshfs-cache: small tmpfs mounts
(root only), filled to the last block.  Each failure names the file and the
reason, and leaves nothing half-written or behind."""
import errno
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, TreeCase, run, run_tests, tool  # noqa: E402
from mount import Mount  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
MODELS = ["characters/strip.gltf", "crate/crate.obj", "props/cone.ply", "props/tetra.stl",
          "scene/street.dae"]
ENOSPC = "No space left on device"
LOG_LINE = re.compile(r"^meshfs: (error|warning|info|debug): (.*)$", re.M)


def full_cache_line(model):
    return ("cache: No space left on device while storing views (first for " + model +
            "); views are converted but not kept, and fail, until space is freed")


FULL_CACHE_REASON = ("cache: No space left on device while storing views; the view was "
                     "converted but not kept, and fails until space is freed")


@unittest.skipUnless(os.geteuid() == 0, "mounts a tmpfs: root only")
class FullDiskTest(TreeCase):
    def small_fs(self, name, size):
        """A tmpfs of size at self.tmp/name, unmounted after the test."""
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", d], check=True)
        return d

    def fill(self, d):
        """Fills d's file system with d/filler, to its last block."""
        with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
            try:
                while f.write(b"\0" * 4096):
                    pass
            except OSError:
                pass

    def test_no_cache_with_tmpdir_full_leaves_no_private_cache(self):
        """--no-cache with TMPDIR full: the private cache cannot be set up
        (its CACHEDIR.TAG cannot be written).  The run fails naming it and
        the reason, and removes what it made there: it used to leave
        meshfs-convert-PID-XXXXXX/{index,tmp,v2} behind (an rmdir of a
        folder that was not empty)."""
        tmpdir = self.small_fs("tmpdir", "64k")
        self.fill(tmpdir)
        p = subprocess.run([tool("meshfs-convert"), "-q", "--no-cache", "-o",
                            os.path.join(self.tmp, "out"), os.path.join(EXAMPLES, "props")],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TMPDIR=tmpdir))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, "meshfs-convert: cache " + tmpdir +
                         r"/meshfs-convert-\d+-\w{6}: writing CACHEDIR.TAG: " + ENOSPC)
        self.assertEqual(os.listdir(tmpdir), ["filler"])

    def test_report_on_a_full_disk_leaves_the_earlier_one(self):
        """--report whose file system fills: status 1, a message naming the
        report and the reason, and the earlier report as it was, not a torn
        or empty one under its name (it used to be truncated at the start
        and written in place); once there is room again, a rerun writes it
        whole."""
        d = self.small_fs("rep", "64k")
        rpath = os.path.join(d, "r.json")
        old = b'{"model":"from the last run"}\n'
        with open(rpath, "wb") as f:
            f.write(old)
        self.fill(d)
        out = os.path.join(self.tmp, "out")
        args = [tool("meshfs-convert"), "-q", "--no-cache", "--report", rpath, "-o", out, EXAMPLES]
        p = run(args, timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"meshfs-convert: --report '{rpath}': {ENOSPC}", p.stderr)
        with open(rpath, "rb") as f:
            self.assertEqual(f.read(), old)
        self.assertEqual(sorted(os.listdir(d)), ["filler", "r.json"])
        os.unlink(os.path.join(d, "filler"))
        p = run(args, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(rpath) as f:
            rows = [json.loads(line) for line in f]
        self.assertEqual(sorted(r["model"] for r in rows), MODELS)
        self.assertEqual(sorted(os.listdir(d)), ["r.json"])
        self.assertEqual(os.stat(rpath).st_mode & 0o777, 0o644)

    def test_warm_on_a_full_cache_names_each_failed_model(self):
        """meshfs-cache warm into a cache whose file system is full: every
        model fails, and each is named with the reason.  warm used to print
        only 'warm: 0 converted, 0 up to date, 5 failed'."""
        d = self.small_fs("cachefs", "1m")
        cache = os.path.join(d, "cache")
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        run([tool("meshfs-cache"), "--cache-dir", cache, "warm", empty], check=True)
        self.fill(d)
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "--json", "warm",
                 EXAMPLES], timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(json.loads(p.stdout)["failed"], 5)
        for m in MODELS:
            self.assertRegex(p.stderr, f"meshfs-cache: warm: {EXAMPLES}/{m}: [^\n]*{ENOSPC}\n")
        os.unlink(os.path.join(d, "filler"))
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "warm", EXAMPLES], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "warm: 5 converted, 0 up to date, 0 failed\n")
        self.assertEqual(p.stderr, "")

    def assert_fails_for_the_cache(self, view):
        with self.assertRaises(OSError) as cm:
            with open(view, "rb") as f:
                f.read()
        self.assertEqual(cm.exception.errno, errno.EIO, view)
        self.assertEqual(os.getxattr(view, "user.meshfs.error").decode(), FULL_CACHE_REASON)

    def test_mount_on_a_full_cache_says_so_once(self):
        """A mount whose cache's file system is full: every stat and open of
        a view converts again and fails with EIO (as documented), and the
        log says the cache's condition once, as the cache's, naming the
        first model that met it: not the ten lines per conversion it used
        to write ('props/cone.ply: fmd: writing output: No space left on
        device' for each of eight views, which read as the model's fault,
        and 'cache: manifest: cache: writing (cache): ...').  Once a run
        stores again it says so once; a second fill is said once more.
        user.meshfs.stats counts the runs the cache could not store."""
        d = self.small_fs("cachefs", "1m")
        cache = os.path.join(d, "cache")
        mnt = os.path.join(self.tmp, "mnt")
        with Mount(EXAMPLES, mnt, cache) as m:
            self.fill(d)
            for _ in range(3):
                self.assert_fails_for_the_cache(os.path.join(mnt, "props", "cone.fmd"))
                self.assert_fails_for_the_cache(os.path.join(mnt, "props", "cone.gmf"))
                self.assert_fails_for_the_cache(os.path.join(mnt, "props", "tetra.dem"))
                os.stat(os.path.join(mnt, "props", "tetra.vrt"))
            st = m.stats()
            self.assertGreaterEqual(st["conversions"], 6)  # each access tried again
            self.assertEqual(st["cache_store_failures"], st["conversions"])
            self.assertEqual(st["conversion_failures"], 0)  # no model failed
            self.assertEqual(LOG_LINE.findall(m.output()),
                             [("error", full_cache_line("props/cone.ply"))], m.output())
            # room again: the next run stores, and that is said once
            os.unlink(os.path.join(d, "filler"))
            time.sleep(1.2)  # past the kernel's cached size-0 attributes
            with open(os.path.join(mnt, "props", "cone.fmd"), "rb") as f:
                self.assertTrue(f.read())
            with open(os.path.join(mnt, "props", "tetra.dem"), "rb") as f:
                self.assertTrue(f.read())
            failures = m.stats()["cache_store_failures"]
            self.assertEqual(failures, st["cache_store_failures"])
            # full again: said once more, naming the model that met it
            self.fill(d)
            for _ in range(2):
                self.assert_fails_for_the_cache(os.path.join(mnt, "crate", "crate.fmd"))
            self.assertGreater(m.stats()["cache_store_failures"], failures)
            out = m.output()
        self.assertEqual(LOG_LINE.findall(out),
                         [("error", full_cache_line("props/cone.ply")),
                          ("error", "cache: storing again"),
                          ("error", full_cache_line("crate/crate.obj"))], out)
        self.assertNotIn(d, out)  # no cache path (docs/security.md)


if __name__ == "__main__":
    run_tests()

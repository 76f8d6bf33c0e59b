"""Issue 11 section 1: what libfuse 3.17 lets the kernel do for meshfs,
each on a real mount, asserting on counters the daemon keeps
(user.meshfs.stats) and on the bytes a user reads.

cache_readdir   a repeat listing of an unchanged folder sends no READDIR to
                the daemon; a folder whose entries changed lists afresh
parallel dirops cold lookups of four models in one folder convert at once
                (the kernel no longer serialises lookups per folder)
passthrough     with -o passthrough (as root, Linux >= 6.9) the kernel reads
                open views itself: cat, read, mmap and cp give the bytes the
                daemon serves and no READ reaches it; an open handle keeps
                its bytes when the model changes; without CAP_SYS_ADMIN the
                mount says so once and serves views the ordinary way

All need libfuse >= 3.17 in the daemon (3.14 drops the flags on the way
to the kernel); against 3.14 they skip, saying so.
"""
import errno
import mmap
import os
import platform
import re
import shutil
import subprocess
import threading
import time
import unittest

from common import SOURCE, run_tests, tempdir, tool
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")


def fuse_version():
    """The libfuse the daemon runs with, as (major, minor), from meshfs --version."""
    p = subprocess.run([tool("meshfs"), "--version"], capture_output=True, text=True)
    m = re.search(r"FUSE library version (\d+)\.(\d+)", p.stdout + p.stderr)
    if not m:
        raise AssertionError("meshfs --version names no FUSE library version:\n" + p.stdout + p.stderr)
    return int(m.group(1)), int(m.group(2))


NEED_317 = unittest.skipIf(fuse_version() < (3, 17),
                           "meshfs is built against libfuse < 3.17, which does not pass "
                           "cache_readdir / parallel dirops on to the kernel")


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        os.makedirs(os.path.join(self.src, "props"))
        shutil.copy(os.path.join(EXAMPLES, "props", "tetra.stl"), os.path.join(self.src, "props"))

    def tearDown(self):
        self._tmp.cleanup()


@NEED_317
class ListingKeptByKernel(Base):
    def test_repeat_listing_costs_no_readdir(self):
        d = os.path.join(self.mnt, "props")
        with Mount(self.src, self.mnt, self.cache) as m:
            first = sorted(os.listdir(d))
            self.assertIn("tetra.stl", first)
            self.assertIn("tetra.gmf", first)
            n1 = m.stats()["readdir_requests"]
            self.assertGreater(n1, 0)  # the first listing reached the daemon
            for _ in range(3):
                self.assertEqual(sorted(os.listdir(d)), first)
            self.assertEqual(m.stats()["readdir_requests"], n1,
                             "a listing of an unchanged folder reached the daemon")
            # a new file in SRC: the folder's signature moved, so it lists afresh
            open(os.path.join(self.src, "props", "new.txt"), "w").close()
            again = sorted(os.listdir(d))
            self.assertIn("new.txt", again)
            n2 = m.stats()["readdir_requests"]
            self.assertGreater(n2, n1)
            self.assertEqual(sorted(os.listdir(d)), again)
            self.assertEqual(m.stats()["readdir_requests"], n2)
            # a removed model: its views leave the listing at once
            os.unlink(os.path.join(self.src, "props", "tetra.stl"))
            gone = os.listdir(d)
            self.assertNotIn("tetra.gmf", gone)
            self.assertEqual(sorted(gone), ["new.txt"])
            # the mount's root too
            self.assertEqual(os.listdir(self.mnt), ["props"])
            n3 = m.stats()["readdir_requests"]
            self.assertEqual(os.listdir(self.mnt), ["props"])
            self.assertEqual(m.stats()["readdir_requests"], n3)

    def test_hide_failed_listing_follows_a_failure(self):
        # The listing was kept while the view was not known to fail; the
        # failure (a view-state change) makes the next listing fresh.
        with open(os.path.join(self.src, "props", "broken.obj"), "w") as f:
            f.write("v 0 0 0\nf 1 2 3\n")  # face index out of range
        d = os.path.join(self.mnt, "props")
        with Mount(self.src, self.mnt, self.cache, "hide_failed") as m:
            self.assertIn("broken.gmf", os.listdir(d))
            self.assertIn("broken.gmf", os.listdir(d))
            with self.assertRaises(OSError):
                open(os.path.join(d, "broken.gmf"), "rb").close()
            self.assertGreater(m.stats()["conversion_failures"], 0)
            self.assertNotIn("broken.gmf", os.listdir(d))


@NEED_317
class ParallelLookups(Base):
    def test_four_cold_models_in_one_folder_convert_at_once(self):
        # Each conversion sleeps 1 s in the worker.  With lookups serialised
        # per folder (libfuse 3.14) the kernel sends the next LOOKUP only when
        # the previous conversion is over, so at most one runs at a time.
        many = os.path.join(self.src, "many")
        os.makedirs(many)
        for i in range(4):
            shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(many, f"t{i}.stl"))
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="1")
        with Mount(self.src, self.mnt, self.cache, "convert_jobs=4", env=env) as m:
            sizes = [None] * 4

            def stat(i):
                sizes[i] = os.stat(os.path.join(self.mnt, "many", f"t{i}.gmf")).st_size

            ts = [threading.Thread(target=stat, args=(i,)) for i in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            s = m.stats()
            self.assertEqual(s["conversions"], 4)
            self.assertEqual(s["conversions_running"], 0)
            self.assertEqual(s["conversions_peak"], 4,
                             "the four cold lookups in one folder did not convert at once")
            self.assertTrue(all(n and n > 0 for n in sizes), sizes)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def grid_obj(n):
    """An OBJ grid of (n-1)^2 triangles: views grow with n."""
    lines = [f"v {i} {((i * j) % 7) * 0.1} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


def save(path, text):
    """As editors save: a complete new file renamed over the old one."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def kernel_at_least(major, minor):
    m = re.match(r"(\d+)\.(\d+)", platform.release())
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (major, minor)


@NEED_317
@unittest.skipUnless(os.geteuid() == 0, "passthrough needs CAP_SYS_ADMIN: run as root")
@unittest.skipUnless(kernel_at_least(6, 9), "passthrough needs Linux >= 6.9")
class Passthrough(Base):
    def setUp(self):
        super().setUp()
        save(os.path.join(self.src, "props", "grid.obj"), grid_obj(60))

    def expected(self, *names):
        """The views' bytes as the daemon serves them (an ordinary mount)."""
        with Mount(self.src, self.mnt, self.cache) as m:
            out = {n: read(os.path.join(self.mnt, "props", n)) for n in names}
            s = m.stats()
            self.assertGreater(s["read_requests"], 0)
            self.assertEqual(s["passthrough_opens"], 0)
        return out

    def test_reads_never_reach_the_daemon(self):
        exp = self.expected("grid.gmf", "grid.vrt", "tetra.fmd")
        self.assertGreater(len(exp["grid.gmf"]), 100000)
        with Mount(self.src, self.mnt, self.cache, "passthrough") as m:
            v = os.path.join(self.mnt, "props", "grid.gmf")
            cat = subprocess.run(["cat", v], capture_output=True)
            self.assertEqual(cat.returncode, 0)
            self.assertEqual(cat.stdout, exp["grid.gmf"])
            self.assertEqual(read(os.path.join(self.mnt, "props", "grid.vrt")), exp["grid.vrt"])
            with open(v, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                self.assertEqual(mm[:], exp["grid.gmf"])
            out = os.path.join(self.tmp, "copy.fmd")
            subprocess.run(["cp", os.path.join(self.mnt, "props", "tetra.fmd"), out], check=True)
            self.assertEqual(read(out), exp["tetra.fmd"])
            # two handles of one view at once share its backing file
            with open(v, "rb") as a, open(v, "rb") as b:
                self.assertEqual(a.read(), b.read())
            s = m.stats()
            self.assertEqual(s["passthrough_opens"], 6)
            self.assertEqual(s["read_requests"], 0, "a read of a passthrough view reached the daemon")
            self.assertEqual(s["views_served"], 6)
            self.assertIn("reads of views: passthrough", m.output())

    def test_open_handle_keeps_its_bytes_when_the_model_changes(self):
        old = self.expected("grid.gmf")["grid.gmf"]
        model = os.path.join(self.src, "props", "grid.obj")
        v = os.path.join(self.mnt, "props", "grid.gmf")
        with Mount(self.src, self.mnt, self.cache, "passthrough") as m:
            with open(v, "rb") as f:
                head = f.read(4096)
                save(model, grid_obj(20))
                os.utime(model, ns=(os.stat(model).st_atime_ns, os.stat(model).st_mtime_ns + 10**9))
                # the kernel binds one backing file to an inode while it is
                # open, so the new bytes cannot be opened beside the old
                deadline = time.monotonic() + 5
                with self.assertRaises(OSError) as cm:
                    while time.monotonic() < deadline:  # attributes may be cached a moment
                        open(v, "rb").close()
                        time.sleep(0.1)
                self.assertEqual(cm.exception.errno, errno.EBUSY)
                self.assertEqual(head + f.read(), old)
            new = read(v)  # the old handle closed: the new view opens
            self.assertNotEqual(new, old)
            self.assertEqual(len(new), os.stat(v).st_size)
            self.assertEqual(m.stats()["read_requests"], 0)
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertEqual(read(v), new)

    def test_without_cap_sys_admin_views_are_served_by_the_daemon(self):
        exp = self.expected("grid.gmf")
        env = dict(os.environ, MESHFS_TEST_NO_SYS_ADMIN="1")
        with Mount(self.src, self.mnt, self.cache, "passthrough", env=env) as m:
            v = os.path.join(self.mnt, "props", "grid.gmf")
            for _ in range(2):
                self.assertEqual(read(v), exp["grid.gmf"])
            with open(v, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                self.assertEqual(mm[:], exp["grid.gmf"])
            s = m.stats()
            self.assertEqual(s["passthrough_opens"], 0)
            self.assertGreater(s["read_requests"], 0)
            log = m.output()
            self.assertEqual(log.count("passthrough refused by the kernel"), 1, log)
            self.assertIn("lacks CAP_SYS_ADMIN", log)

    def test_without_the_option_the_daemon_serves(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            read(os.path.join(self.mnt, "props", "tetra.gmf"))
            s = m.stats()
            self.assertEqual(s["passthrough_opens"], 0)
            self.assertGreater(s["read_requests"], 0)
            self.assertNotIn("passthrough", m.output())


if __name__ == "__main__":
    run_tests()

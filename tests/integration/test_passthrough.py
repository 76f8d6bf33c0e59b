"""Issue 11 section 1: what libfuse 3.17 lets the kernel do for meshfs,
each on a real mount, asserting on counters the daemon keeps
(user.meshfs.stats) and on the bytes a user reads.

cache_readdir   a repeat listing of an unchanged folder sends no READDIR to
                the daemon; a folder whose entries changed lists afresh
parallel dirops cold lookups of four models in one folder convert at once
                (the kernel no longer serialises lookups per folder)
passthrough     by default (-o passthrough=auto; as root, Linux >= 6.9) the
                kernel reads open views from their cache entry files: cat,
                mmap, cp and cp -a give meshfs-convert's bytes and no READ
                reaches the daemon; views small enough to live inside their
                model's entry (16 KiB) are read through the daemon; an open
                handle keeps its bytes when the model changes, while new
                opens read the new view from a new inode; without
                CAP_SYS_ADMIN, with -o passthrough=off or for an entry in
                the trailer form the daemon serves, and the log says which
                path is in use, once; a bad value exits 2

Parallel dirops and passthrough need libfuse >= 3.17 in the daemon (3.14
never sends the one flag and lacks the other); against 3.14 they skip,
saying so.  Kept listings work with 3.14 too: the daemon's low-level
replies pass cache_readdir on (its high-level library dropped it).
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

from common import SOURCE, convert, run_tests, settle, tempdir, tool
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
                           "parallel dirops or passthrough on to the kernel")


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


class ListingKeptByKernel(Base):
    def test_repeat_listing_costs_no_readdir(self):
        d = os.path.join(self.mnt, "props")
        settle(os.path.join(self.src, "props"))
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
            self.assertGreater(m.stats()["readdir_requests"], n1)
            # a listing of a folder changed this instant is not kept (a
            # change in the same clock tick would not show): once it settles
            settle(os.path.join(self.src, "props"))
            self.assertEqual(sorted(os.listdir(d)), again)
            n2 = m.stats()["readdir_requests"]
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

    def test_a_kept_listing_ends_when_what_it_sent_expires(self):
        # The kernel keeps a listing only while the names and attributes it
        # carried are valid (the shorter timeout): past that, a kept listing
        # made every stat its own LOOKUP (ls -l, find -ls, rsync a minute
        # later: a round trip a name), where a fresh one brings them back
        # with their attributes.  Within the window it is still kept.
        props = os.path.join(self.src, "props")
        for i in range(10):
            shutil.copy(os.path.join(props, "tetra.stl"), os.path.join(props, f"t{i}.stl"))
        settle(props)
        d = os.path.join(self.mnt, "props")

        def stat_all():
            return {e.name: e.stat(follow_symlinks=False).st_size for e in os.scandir(d)}

        with Mount(self.src, self.mnt, self.cache) as m:  # both timeouts 1 s
            first = stat_all()  # converts: every view's size is known after it
            self.assertEqual(len(first), 11 * 9 + 1)  # and the package
            time.sleep(1.5)
            warm = stat_all()
            self.assertEqual(warm, first)
            s0 = m.stats()
            time.sleep(1.5)  # past both timeouts: the next listing is fresh
            self.assertEqual(stat_all(), first)
            s1 = m.stats()
            self.assertGreater(s1["readdir_requests"], s0["readdir_requests"])
            # the folder's own LOOKUP and GETATTR (they expired too), not
            # one for each of its 100 names
            self.assertLessEqual(s1["attr_requests"] - s0["attr_requests"], 2)
        with Mount(self.src, self.mnt, self.cache, "entry_timeout=60", "attr_timeout=60") as m:
            self.assertEqual(stat_all(), first)
            s0 = m.stats()
            time.sleep(0.8)  # well within the timeouts: kept, and nothing asked
            self.assertEqual(stat_all(), first)
            s1 = m.stats()
            self.assertEqual(s1["readdir_requests"], s0["readdir_requests"])
            self.assertEqual(s1["attr_requests"], s0["attr_requests"])

    def test_an_unsettled_folder_is_listed_afresh(self):
        # A folder whose times are too recent for a change to move them
        # (here: its mtime ahead of the clock, as a file server's may be) is
        # never kept by the kernel, and its table is read again each time:
        # a file added then shows at once
        props = os.path.join(self.src, "props")
        d = os.path.join(self.mnt, "props")
        ahead = time.time_ns() + 30 * 10**9
        os.utime(props, ns=(ahead, ahead))
        with Mount(self.src, self.mnt, self.cache) as m:
            first = sorted(os.listdir(d))
            n = m.stats()["readdir_requests"]
            for i in range(3):
                self.assertEqual(sorted(os.listdir(d)), first)
                self.assertGreater(m.stats()["readdir_requests"], n, i)
                n = m.stats()["readdir_requests"]
            # a file added with the folder's times put back as they were:
            # only its ctime moved, and a listing still shows it
            open(os.path.join(props, "new.txt"), "w").close()
            os.utime(props, ns=(ahead, ahead))
            self.assertIn("new.txt", os.listdir(d))
            # settled: kept again
            os.utime(props, ns=(ahead - 60 * 10**9, ahead - 60 * 10**9))
            settle(props)
            again = sorted(os.listdir(d))
            n = m.stats()["readdir_requests"]
            self.assertEqual(sorted(os.listdir(d)), again)
            self.assertEqual(m.stats()["readdir_requests"], n)

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


def entry_files(cache, suffix=".e"):
    """{path: bytes} of every view entry (.e), or model entry (".m"), in the
    cache's version 2 directory."""
    out = {}
    for d, _, files in os.walk(os.path.join(cache, "v2")):
        for f in files:
            if f.endswith(suffix):
                out[os.path.join(d, f)] = read(os.path.join(d, f))
    return out


def to_trailer_form(path):
    """Rewrites a version 2 entry from its xattr form to its trailer form,
    as a cache on a file system without user xattrs holds it (docs/cache.md):
    the same 56-byte record, appended instead of attached."""
    rec = os.getxattr(path, "user.meshfs.entry")
    assert len(rec) == 56
    data = read(path)
    assert int.from_bytes(rec[32:40], "little") == len(data)
    os.removexattr(path, "user.meshfs.entry")
    with open(path, "ab") as f:
        f.write(rec)


@NEED_317
@unittest.skipUnless(os.geteuid() == 0, "passthrough needs CAP_SYS_ADMIN: run as root")
@unittest.skipUnless(kernel_at_least(6, 9), "passthrough needs Linux >= 6.9")
class Passthrough(Base):
    """Passthrough is the default read path of warm views (-o passthrough=auto)."""

    def setUp(self):
        super().setUp()
        save(os.path.join(self.src, "props", "grid.obj"), grid_obj(60))
        self.v = os.path.join(self.mnt, "props", "grid.gmf")

    def converted(self, *names):
        """The views' bytes as meshfs-convert writes them."""
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        return {n: read(os.path.join(out, "props", n)) for n in names}

    def test_default_mount_passes_reads_through(self):
        exp = self.converted("grid.gmf", "grid.vrt", "tetra.fmd")
        self.assertGreater(len(exp["grid.gmf"]), 100000)
        with Mount(self.src, self.mnt, self.cache, "log_level=info") as m:
            cat = subprocess.run(["cat", self.v], capture_output=True)
            self.assertEqual(cat.returncode, 0)
            self.assertEqual(cat.stdout, exp["grid.gmf"])  # not one trailer byte more
            self.assertEqual(read(os.path.join(self.mnt, "props", "grid.vrt")), exp["grid.vrt"])
            with open(self.v, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                self.assertEqual(len(mm), len(exp["grid.gmf"]))
                self.assertEqual(mm[:], exp["grid.gmf"])
            outa = os.path.join(self.tmp, "copy-a.gmf")
            subprocess.run(["cp", "-a", self.v, outa], check=True)
            self.assertEqual(read(outa), exp["grid.gmf"])
            # two handles of one view at once share its backing file
            with open(self.v, "rb") as a, open(self.v, "rb") as b:
                self.assertEqual(a.read(), b.read())
            s = m.stats()
            self.assertEqual(s["passthrough_opens"], 6)
            self.assertEqual(s["views_served"], 6)
            self.assertEqual(s["read_requests"], 0, "a read of a passthrough view reached the daemon")
            # tetra.fmd (a few hundred bytes) lives inside its model's entry,
            # at an offset: the daemon reads it
            self.assertLess(len(exp["tetra.fmd"]), 16384)
            out = os.path.join(self.tmp, "copy.fmd")
            subprocess.run(["cp", os.path.join(self.mnt, "props", "tetra.fmd"), out], check=True)
            self.assertEqual(read(out), exp["tetra.fmd"])
            s = m.stats()
            self.assertEqual((s["passthrough_opens"], s["views_served"]), (6, 7))
            self.assertGreater(s["read_requests"], 0)
            log = m.output()
            self.assertEqual(log.count("reads of views:"), 1, log)
            self.assertIn("reads of views: passthrough", log)
            # the backing file is the cache entry itself: its whole content is the view
            entries = entry_files(self.cache)
            for name in ("grid.gmf", "grid.vrt"):
                self.assertGreater(len(exp[name]), 16384)
                self.assertIn(exp[name], entries.values(), name)
            self.assertNotIn(exp["tetra.fmd"], entries.values())
            self.assertTrue(any(exp["tetra.fmd"] in b for b in entry_files(self.cache, ".m").values()))

    def test_bare_option_and_on_pass_through(self):
        exp = self.converted("grid.gmf")["grid.gmf"]
        for opt in ("passthrough", "passthrough=on", "passthrough=auto"):
            with self.subTest(opt=opt), Mount(self.src, self.mnt, self.cache, opt) as m:
                self.assertEqual(read(self.v), exp)
                s = m.stats()
                self.assertEqual((s["passthrough_opens"], s["read_requests"]), (1, 0))
                self.assertNotIn("warning: reads of views", m.output())

    def test_off_uses_the_daemon(self):
        exp = self.converted("grid.gmf")["grid.gmf"]
        with Mount(self.src, self.mnt, self.cache, "passthrough=off", "log_level=info") as m:
            self.assertEqual(read(self.v), exp)
            with open(self.v, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                self.assertEqual(mm[:], exp)
            s = m.stats()
            self.assertEqual(s["passthrough_opens"], 0)
            self.assertGreater(s["read_requests"], 0)
            self.assertIn("reads of views: through the daemon (-o passthrough=off)", m.output())

    def test_bad_value_exits_2(self):
        for bad in ("passthrough=yes", "passthrough=", "passthrough=AUTO"):
            with self.subTest(bad=bad):
                p = subprocess.run([tool("meshfs"), "-f", "-o", "cache_dir=" + self.cache + "," + bad,
                                    self.src, self.mnt], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("-o " + bad + ": not auto, on or off", p.stderr)
                self.assertFalse(os.path.ismount(self.mnt))

    def test_open_handle_keeps_its_bytes_when_the_model_changes(self):
        # The kernel binds one backing file to an inode while a passthrough
        # handle lasts and fails every other open of it, so the new view is
        # opened as a new file (a new node id) beside the old one: the old
        # handle keeps the old bytes, the new opens read the new ones.
        model = os.path.join(self.src, "props", "grid.obj")
        with Mount(self.src, self.mnt, self.cache) as m:
            old = read(self.v)
            with open(self.v, "rb") as f:
                head = f.read(4096)
                ino_old = os.fstat(f.fileno()).st_ino
                save(model, grid_obj(40))
                os.utime(model, ns=(os.stat(model).st_atime_ns, os.stat(model).st_mtime_ns + 10**9))
                deadline = time.monotonic() + 5
                new = old
                while new == old and time.monotonic() < deadline:  # attributes may be cached a moment
                    new = read(self.v)
                    time.sleep(0.05)
                self.assertNotEqual(new, old)
                self.assertGreater(len(new), 16384)  # its own entry file, passed through
                with open(self.v, "rb") as g, open(self.v, "rb") as g2:
                    self.assertEqual(g.read(), new)
                    self.assertEqual(os.fstat(g.fileno()).st_size, len(new))
                    self.assertEqual(g2.read(), new)  # the new inode's backing file, shared
                    with mmap.mmap(g.fileno(), 0, prot=mmap.PROT_READ) as mm:
                        self.assertEqual(mm[:], new)
                self.assertEqual(os.stat(self.v).st_size, len(new))
                self.assertEqual(head + f.read(), old)  # the old handle keeps its bytes
                self.assertEqual(os.fstat(f.fileno()).st_size, len(old))
                f.seek(0)
                with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                    self.assertEqual(mm[:], old)
                self.assertEqual(os.fstat(f.fileno()).st_ino, ino_old)
                s = m.stats()
                self.assertEqual(s["views_renewed"], 1)
            # the old handle closed: the new view still opens, on its inode
            self.assertEqual(read(self.v), new)
            s = m.stats()
            self.assertEqual(s["read_requests"], 0)
            self.assertEqual(s["views_renewed"], 1)
            self.assertNotIn("cannot be opened", m.output())
        self.assertEqual(new, self.converted("grid.gmf")["grid.gmf"])

    def test_a_close_then_open_of_the_changed_view_opens_the_new_one(self):
        # The kernel unbinds the old backing file before close() returns but
        # tells the daemon later (a background RELEASE): here 300 ms later,
        # so the open below reaches the daemon before it, every run, on an
        # inode still bound to the old entry: the view moves to a new inode
        # instead of failing for a file nothing holds.
        model = os.path.join(self.src, "props", "grid.obj")
        env = dict(os.environ, MESHFS_TEST_RELEASE_DELAY_MS="300")
        with Mount(self.src, self.mnt, self.cache, env=env) as m:
            seen = set()
            for n in (40, 50, 60):
                with open(self.v, "rb") as f:
                    old = f.read()
                    save(model, grid_obj(n))
                    os.utime(model, ns=(os.stat(model).st_atime_ns,
                                        os.stat(model).st_mtime_ns + n * 10**9))
                new = read(self.v)  # at once: the RELEASE is still on its way
                self.assertNotEqual(new, old)
                self.assertEqual(len(new), os.stat(self.v).st_size)
                self.assertNotIn(new, seen)
                seen.add(new)
            s = m.stats()
            self.assertEqual(s["read_requests"], 0)
            self.assertGreaterEqual(s["passthrough_opens"], 6)
            self.assertEqual(s["views_renewed"], 3)
        self.assertEqual(new, self.converted("grid.gmf")["grid.gmf"])

    def test_without_cap_sys_admin_the_daemon_serves(self):
        # The daemon gives up CAP_SYS_ADMIN once mounted (a test hook: a root
        # daemon without it cannot mount, because fusermount3 then lacks it
        # too).  auto sees it at init and does not ask the kernel; on asks,
        # and the kernel's refusal of the first backing file is what it logs.
        exp = self.converted("grid.gmf")["grid.gmf"]
        env = dict(os.environ, MESHFS_TEST_NO_SYS_ADMIN="1")
        cases = (("log_level=info", "info: reads of views: through the daemon "
                  "(passthrough needs CAP_SYS_ADMIN, which the daemon lacks)"),
                 ("passthrough=on", "warning: reads of views: through the daemon "
                  "(passthrough refused by the kernel: Operation not permitted: "
                  "the daemon lacks CAP_SYS_ADMIN)"))
        for opt, line in cases:
            with self.subTest(opt=opt), Mount(self.src, self.mnt, self.cache, opt, env=env) as m:
                for _ in range(2):
                    self.assertEqual(read(self.v), exp)
                with open(self.v, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                    self.assertEqual(mm[:], exp)
                subprocess.run(["cp", self.v, os.path.join(self.tmp, "c.gmf")], check=True)
                self.assertEqual(read(os.path.join(self.tmp, "c.gmf")), exp)
                s = m.stats()
                self.assertEqual(s["passthrough_opens"], 0)
                self.assertGreater(s["read_requests"], 0)
                log = m.output()
                self.assertEqual(log.count("reads of views:"), 1, log)
                self.assertIn(line, log)

    def test_trailer_form_entries_are_served_by_the_daemon(self):
        # A cache on a file system without user xattrs keeps each record as
        # a trailer; the kernel would read it as the view's last bytes, so
        # such an entry is never passed through.
        # Model entries (the small views inside) may be trailer-formed too.
        save(os.path.join(self.src, "props", "grid2.obj"), grid_obj(50))
        v2 = os.path.join(self.mnt, "props", "grid2.gmf")
        small = os.path.join(self.mnt, "props", "tetra.gmf")
        with Mount(self.src, self.mnt, self.cache) as m:
            exp, exp2, exp_small = read(self.v), read(v2), read(small)
        entries = entry_files(self.cache)
        path = next(p for p, b in entries.items() if b == exp)
        to_trailer_form(path)
        self.assertEqual(os.path.getsize(path), len(exp) + 56)
        models = [p for p, b in entry_files(self.cache, ".m").items() if exp_small in b]
        self.assertEqual(len(models), 1)
        to_trailer_form(models[0])
        with Mount(self.src, self.mnt, self.cache, "log_level=info") as m:
            cat = subprocess.run(["cat", self.v], capture_output=True)
            self.assertEqual(cat.stdout, exp)
            self.assertEqual(read(v2), exp2)
            self.assertEqual(read(v2), exp2)
            self.assertEqual(read(small), exp_small)  # not one trailer byte more
            s = m.stats()
            self.assertGreater(s["read_requests"], 0)
            self.assertEqual(s["passthrough_opens"], 2)  # grid2.gmf, twice
            self.assertEqual(s["conversions"], 0)
            self.assertEqual(s["cache_corrupt_discarded"], 0)
            self.assertIn("through the daemon for cache entries in the trailer form", m.output())

    def test_cache_of_the_previous_layout_is_never_served(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            exp = read(self.v)
        # a version 1 tree, as an older meshfs left it, holding other bytes
        # under the same names
        for p, b in entry_files(self.cache).items():
            old = p.replace(os.sep + "v2" + os.sep, os.sep + "v1" + os.sep)
            os.makedirs(os.path.dirname(old), exist_ok=True)
            with open(old, "wb") as f:
                f.write(b"mfscache\x01\x00\x00\x00\x01\x00\x00\x00" + bytes(40) + b"stale")
        shutil.rmtree(os.path.join(self.cache, "v2"))
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertFalse(os.path.exists(os.path.join(self.cache, "v1")))
            self.assertEqual(read(self.v), exp)
            self.assertEqual(m.stats()["conversions"], 1)


if __name__ == "__main__":
    run_tests()

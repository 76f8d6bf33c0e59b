"""The mount, end to end: real FUSE mounts of real models, exercised with
ordinary tools (cat, cmp, stat, ls, find, rsync, python mmap)."""
import errno
import mmap
import os
import shutil
import subprocess
import threading
import time
import unittest

from common import (CORPUS, FORMATS, SOURCE, TreeCase, convert, run, tempdir, tmp_leftovers,
                    tree_bytes)
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")


def read(path):
    with open(path, "rb") as f:
        return f.read()


# Folders of examples/assets that hold models: each shows one package.
PACKAGES = 4


def views_of(root):
    """Every view and every game_resources.lgepkg under root."""
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            if os.path.splitext(f)[1][1:] in FORMATS or f == "game_resources.lgepkg":
                out.append(os.path.join(d, f))
    return sorted(out)


class MountTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(EXAMPLES, self.src, symlinks=True)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def mount(self, *opts, src=None):
        return Mount(src or self.src, self.mnt, self.cache, *opts)

    def test_views_equal_convert_output(self):
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = tree_bytes(out)
        with self.mount() as m:
            got = {}
            for path in views_of(self.mnt):
                data = read(path)
                rel = os.path.relpath(path, self.mnt)
                got[rel] = data
                self.assertEqual(os.stat(path).st_size, len(data), rel)
                if data:
                    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                        self.assertEqual(mm[:], data, rel)
            self.assertEqual(len(got), 5 * len(FORMATS) + PACKAGES)
            self.assertEqual(sorted(got), sorted(expected))
            for rel in expected:
                self.assertEqual(got[rel], expected[rel], rel)
            # cmp, the real tool, agrees
            run(["cmp", os.path.join(self.mnt, "crate", "crate.gmf"), os.path.join(out, "crate", "crate.gmf")],
                check=True)
            self.assertTrue(m.alive())

    def test_passthrough_and_listing(self):
        with self.mount():
            for rel in ("scene/README.txt", "crate/textures/crate.png", "crate/crate.mtl", "crate/crate.obj"):
                a, b = os.path.join(self.src, rel), os.path.join(self.mnt, rel)
                self.assertEqual(read(a), read(b), rel)
                sa, sb = os.stat(a), os.stat(b)
                self.assertEqual((sa.st_size, sa.st_mode, sa.st_mtime_ns, sa.st_ino),
                                 (sb.st_size, sb.st_mode, sb.st_mtime_ns, sb.st_ino), rel)
            # ls -lR and find -ls list every source entry exactly as on SRC
            src_ls = run(["ls", "-lR", "--time-style=+%s", self.src], check=True).stdout
            mnt_ls = run(["ls", "-lR", "--time-style=+%s", self.mnt], check=True).stdout
            # columns folded: a view's size may widen ls's size column
            src_lines = {" ".join(l.split()) for l in src_ls.splitlines() if l and not l.startswith(("total", "/"))}
            mnt_lines = {" ".join(l.split()) for l in mnt_ls.splitlines() if l and not l.startswith(("total", "/"))}
            self.assertTrue(src_lines <= mnt_lines, src_lines - mnt_lines)
            extra = mnt_lines - src_lines
            self.assertEqual(len(extra), 5 * len(FORMATS) + PACKAGES, extra)
            for l in extra:
                self.assertTrue(l.startswith("-r--r--r-- 1 "), l)
            fs = run(["find", self.src, "-printf", "%P %s %M %T@\\n"], check=True).stdout.splitlines()
            fm = run(["find", self.mnt, "-printf", "%P %s %M %T@\\n"], check=True).stdout.splitlines()
            self.assertTrue(set(fs) <= set(fm))
            self.assertEqual(len(fm) - len(fs), 5 * len(FORMATS) + PACKAGES)
            run(["find", self.mnt, "-ls"], check=True)
            # inode numbers are stable while mounted
            v = os.path.join(self.mnt, "crate", "crate.fmd")
            self.assertEqual(os.stat(v).st_ino, os.stat(v).st_ino)
            self.assertEqual(os.stat(v).st_ino, {e.name: e.inode() for e in os.scandir(os.path.dirname(v))}["crate.fmd"])
            # a view's mtime is the newest of its inputs
            # (the diffuse texture is an input: .tex decodes it)
            newest = max(os.stat(os.path.join(self.src, "crate", f)).st_mtime_ns
                         for f in ("crate.obj", "crate.mtl", "textures/crate.png"))
            self.assertEqual(os.stat(v).st_mtime_ns, newest)

    def test_rsync_twice_transfers_nothing(self):
        out = os.path.join(self.tmp, "rs")
        with self.mount():
            run(["rsync", "-a", self.mnt + "/", out + "/"], check=True)
            p = run(["rsync", "-a", "--itemize-changes", "--stats", self.mnt + "/", out + "/"], check=True)
        changes = [l for l in p.stdout.splitlines() if l[:1] in "<>ch." and not l.startswith(".d..t")
                   and l[:2] not in ("Nu", "To")]
        self.assertIn("Number of regular files transferred: 0", p.stdout)
        self.assertEqual(tree_bytes(out)["crate/crate.gmf"], read(os.path.join(self.tmp, "rs", "crate", "crate.gmf")))

    def test_remount_does_zero_conversions(self):
        time.sleep(2.1)  # past the stat index's racy window for fresh copies (docs/cache.md)
        with self.mount() as m:
            first = {p: read(p) for p in views_of(self.mnt)}
            self.assertEqual(m.stats()["conversions"], 5)  # one import per model, not per view
        with self.mount() as m:
            again = {p: read(p) for p in views_of(self.mnt)}
            self.assertEqual(m.stats()["conversions"], 0)
            self.assertEqual(m.stats()["files_hashed"], 0)  # warm: no source bytes re-read
        self.assertEqual(first, again)

    def test_listing_carries_attributes(self):
        """Listings carry each name's attributes (readdirplus), so a listing
        never converts or hashes, and `find -ls` over a warm cache after a
        remount sends no stat request per name."""
        time.sleep(2.1)  # past the stat index's racy window for fresh copies
        ndirs = sum(1 for _ in os.walk(self.src))
        with self.mount() as m:
            names = [f for _, _, fs in os.walk(self.mnt) for f in fs]
            self.assertEqual(sum(os.path.splitext(f)[1][1:] in FORMATS for f in names), 5 * len(FORMATS))
            self.assertEqual((m.stats()["conversions"], m.stats()["files_hashed"]), (0, 0))
            sizes = {os.path.relpath(p, self.mnt): len(read(p)) for p in views_of(self.mnt)}
            self.assertEqual(m.stats()["conversions"], 5)
        with self.mount() as m:
            before = m.stats()["attr_requests"]
            lines = run(["find", self.mnt, "-printf", "%P %s\\n"], check=True).stdout.splitlines()
            listed = dict(l.rsplit(" ", 1) for l in lines if l)
            st = m.stats()
            self.assertEqual({k: int(listed[k]) for k in sizes}, sizes)
            self.assertEqual((st["conversions"], st["files_hashed"]), (0, 0))
            # each view would be one LOOKUP without attributes in the listing;
            # what remains is the root and the folders find walks into
            self.assertLessEqual(st["attr_requests"] - before, ndirs, st)

    def test_option_change_only_moves_its_own_views(self):
        with self.mount() as m:
            gmf = read(os.path.join(self.mnt, "crate", "crate.gmf"))
            fmi = read(os.path.join(self.mnt, "crate", "crate.fmi"))
        self.assertIn(b"=UNKNOWN\n", fmi)
        with self.mount("fmi_textures") as m:
            self.assertEqual(read(os.path.join(self.mnt, "crate", "crate.gmf")), gmf)
            self.assertEqual(m.stats()["conversions"], 0)
            fmi2 = read(os.path.join(self.mnt, "crate", "crate.fmi"))
            self.assertEqual(m.stats()["conversions"], 1)
        self.assertNotEqual(fmi, fmi2)
        self.assertNotIn(b"UNKNOWN", fmi2)

    def test_touch_and_edit(self):
        obj = os.path.join(self.src, "crate", "crate.obj")
        mtl = os.path.join(self.src, "crate", "crate.mtl")
        with self.mount() as m:
            v = os.path.join(self.mnt, "crate", "crate.dem")
            before = read(v)
            self.assertEqual(m.stats()["conversions"], 1)
            time.sleep(0.01)
            os.utime(obj)  # touch: same bytes
            time.sleep(1.2)  # past the attribute cache
            self.assertEqual(read(v), before)
            self.assertEqual(m.stats()["conversions"], 1)
            self.assertEqual(os.stat(v).st_mtime_ns, os.stat(obj).st_mtime_ns)
            # change the model's bytes: reconverted, new bytes
            with open(obj, "a") as f:
                f.write("v 5 5 5\nv 6 5 5\nv 5 6 5\nf -3 -2 -1\n")
            time.sleep(1.2)
            after = read(v)
            self.assertEqual(m.stats()["conversions"], 2)
            self.assertNotEqual(after, before)
            self.assertEqual(os.stat(v).st_size, len(after))
            # change only the .mtl: the dependency reconverts the model
            fmi_before = read(os.path.join(self.mnt, "crate", "crate.fmi"))
            with open(mtl) as f:
                text = f.read()
            with open(mtl, "w") as f:
                f.write(text.replace("newmtl crate", "newmtl crate\nKd 0.5 0.5 0.5"))
            time.sleep(1.2)
            read(v)
            self.assertEqual(m.stats()["conversions"], 3)

    def test_corrupt_cache_entry_is_rebuilt(self):
        with self.mount():
            good = {p: read(p) for p in views_of(self.mnt)}
        entries = []
        for d, _, files in os.walk(os.path.join(self.cache)):
            for f in files:
                p = os.path.join(d, f)
                if os.path.getsize(p) > 200 and not p.startswith(os.path.join(self.cache, "tmp")):
                    entries.append(p)
        self.assertTrue(entries)
        for p in entries:  # flip a byte in the middle of every sizeable file
            with open(p, "r+b") as f:
                f.seek(os.path.getsize(p) // 2)
                b = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([b[0] ^ 0xFF]))
        with self.mount() as m:
            again = {p: read(p) for p in views_of(self.mnt)}
            self.assertGreater(m.stats()["cache_corrupt_discarded"], 0)
            self.assertGreater(m.stats()["conversions"], 0)
        self.assertEqual(good, again)

    def test_open_view_keeps_its_bytes(self):
        obj = os.path.join(self.src, "crate", "crate.obj")
        with self.mount():
            v = os.path.join(self.mnt, "crate", "crate.dem")
            whole = read(v)
            with open(v, "rb") as f:
                head = f.read(100)
                with open(obj, "a") as src:  # the source changes under the reader
                    src.write("v 7 7 7\nv 8 7 7\nv 7 8 7\nf -3 -2 -1\n")
                time.sleep(1.2)
                rest = f.read()
            self.assertEqual(head + rest, whole)
            fresh = read(v)  # the next open sees the new content
            self.assertNotEqual(fresh, whole)
            # the new vertex (8, 7, 7), in .dem's Blender frame (x, -z, y)
            self.assertIn(b" 8.0 -7.0 7.0 ", fresh)
            self.assertNotIn(b" 8.0 -7.0 7.0 ", whole)

    def test_two_mounts_share_one_cache(self):
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = tree_bytes(out)
        mnt2 = os.path.join(self.tmp, "mnt2")
        got = [{}, {}]
        with self.mount(), Mount(self.src, mnt2, self.cache):
            def reader(k, root):
                for path in views_of(root):
                    got[k][os.path.relpath(path, root)] = read(path)
            ts = [threading.Thread(target=reader, args=(0, self.mnt)),
                  threading.Thread(target=reader, args=(1, mnt2))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(got[0], expected)
        self.assertEqual(got[1], expected)

    def test_concurrent_first_readers(self):
        results = [None] * 16
        with self.mount() as m:
            v = os.path.join(self.mnt, "characters", "strip.gmf")

            def reader(i):
                results[i] = read(v)
            ts = [threading.Thread(target=reader, args=(i,)) for i in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(m.stats()["conversions"], 1)
        self.assertTrue(results[0])
        self.assertTrue(all(r == results[0] for r in results))

    def test_cold_opens_do_not_starve_listing(self):
        # 16 models whose conversions each take >= 1 s, one worker at a time,
        # while ls of another folder and a passthrough read must still answer.
        # (With Debian's libfuse 3.14 the kernel runs lookups in one folder one
        # at a time, so the waiting requests queue in the kernel, not in meshfs:
        # docs/architecture.md.)
        many = os.path.join(self.src, "many")
        os.makedirs(many)
        for i in range(16):
            shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(many, f"t{i}.stl"))
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="1")
        with Mount(self.src, self.mnt, self.cache, "convert_jobs=1", env=env) as m:
            ts = [threading.Thread(target=lambda i=i: os.stat(os.path.join(self.mnt, "many", f"t{i}.gmf")))
                  for i in range(16)]
            for t in ts:
                t.start()
            time.sleep(0.5)
            for _ in range(3):
                t0 = time.monotonic()
                names = os.listdir(os.path.join(self.mnt, "scene"))
                self.assertLess(time.monotonic() - t0, 1.0)
                self.assertIn("README.txt", names)
                t0 = time.monotonic()
                self.assertTrue(read(os.path.join(self.mnt, "scene", "README.txt")))
                self.assertLess(time.monotonic() - t0, 1.0)
                time.sleep(0.3)
            self.assertTrue(any(t.is_alive() for t in ts))  # conversions were still queued
            for t in ts:
                t.join()
            self.assertEqual(m.stats()["conversions"], 16)

    def test_cold_opens_in_many_folders_leave_threads_for_listing(self):
        # 16 cold lookups in 16 folders, one conversion at a time: each
        # lookup holds a FUSE thread.  libfuse's parser defaults to 10
        # threads, which would all be taken, so the ls below would wait for
        # conversions to finish; meshfs's default of 64 leaves room.  Ordering,
        # not time: when ls returns, at most a few conversions have finished.
        for i in range(16):
            d = os.path.join(self.src, f"many{i}")
            os.makedirs(d)
            shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(d, "t.stl"))
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="1")
        with Mount(self.src, self.mnt, self.cache, "convert_jobs=1", env=env) as m:
            ts = [threading.Thread(target=lambda i=i: os.stat(os.path.join(self.mnt, f"many{i}", "t.gmf")))
                  for i in range(16)]
            for t in ts:
                t.start()
            while m.stats()["conversions"] < 1 and any(t.is_alive() for t in ts):
                time.sleep(0.05)  # the first conversion has started and finished
            names = os.listdir(os.path.join(self.mnt, "scene"))
            done_at_ls = m.stats()["conversions"]
            self.assertIn("README.txt", names)
            self.assertLessEqual(done_at_ls, 3, "ls waited for conversions to free FUSE threads")
            for t in ts:
                t.join()
            self.assertEqual(m.stats()["conversions"], 16)

    def test_failing_model(self):
        with open(os.path.join(self.src, "props", "broken.obj"), "w") as f:
            f.write("v 0 0 0\nf 1 2 3\n")  # face index out of range
        with self.mount() as m:
            v = os.path.join(self.mnt, "props", "broken.fmd")
            with self.assertRaises(OSError) as cm:
                read(v)
            self.assertEqual(cm.exception.errno, errno.EIO)
            reason = os.getxattr(v, "user.meshfs.error").decode()
            self.assertIn("import failed", reason)
            self.assertIn("OBJ", reason)
            self.assertNotIn("user.meshfs.error", os.listxattr(v))  # read by name only (cp -a)
            # the rest of the tree still works
            self.assertTrue(read(os.path.join(self.mnt, "props", "cone.gmf")))
            self.assertTrue(read(os.path.join(self.mnt, "scene", "README.txt")))
            # the failure is remembered: reading again converts nothing
            n = m.stats()["conversions"]
            for _ in range(3):
                with self.assertRaises(OSError):
                    read(os.path.join(self.mnt, "props", "broken.gmf"))
            self.assertEqual(m.stats()["conversions"], n)
            self.assertTrue(m.alive())

    def test_cache_disk_full(self):
        # A cache on a tiny tmpfs: storing a view fails with ENOSPC.  The view
        # reads as EIO with that reason, nothing partial is left under a final
        # name, the failure is not remembered, and the rest keeps working.
        os.makedirs(self.cache)
        # mode=0700: a cache directory others can write is refused (docs/security.md)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k,mode=0700", "tmpfs", self.cache],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest("cannot mount a tmpfs: " + r.stderr.strip())
        try:
            big = os.path.join(self.src, "big")
            os.makedirs(big)
            with open(os.path.join(big, "grid.obj"), "w") as f:
                n = 60
                f.writelines(f"v {i} {(i * j) % 7} {j}\n" for j in range(n) for i in range(n))
                f.writelines(f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
                             for j in range(n - 1) for i in range(n - 1))
            with self.mount() as m:
                v = os.path.join(self.mnt, "big", "grid.dem")
                with self.assertRaises(OSError) as cm:
                    read(v)
                self.assertEqual(cm.exception.errno, errno.EIO)
                reason = os.getxattr(v, "user.meshfs.error").decode()
                self.assertIn("No space left on device", reason)
                for d, _, files in os.walk(os.path.join(self.cache, "v2")):
                    for f in files:  # whatever made it is complete and checks out
                        self.assertTrue(f.endswith((".e", ".m")), f)
                self.assertEqual(tmp_leftovers(self.cache), [])
                # small views of other models still fit and read
                self.assertTrue(read(os.path.join(self.mnt, "props", "tetra.fmi")))
                self.assertTrue(read(os.path.join(self.mnt, "scene", "README.txt")))
                self.assertTrue(m.alive())
                # not remembered as the model's failure: with room again it converts
                subprocess.run(["mount", "-o", "remount,size=64m", self.cache], check=True)
                time.sleep(1.2)  # past the kernel's cached size-0 attributes
                data = read(v)
                self.assertEqual(os.stat(v).st_size, len(data))
                out = os.path.join(self.tmp, "out")
                convert([os.path.join(big, "grid.obj")], out)
                self.assertEqual(data, read(os.path.join(out, "grid.dem")))
        finally:
            subprocess.run(["umount", "-l", self.cache])

    def test_read_only(self):
        with self.mount():
            v = os.path.join(self.mnt, "crate", "crate.gmf")
            t = os.path.join(self.mnt, "scene", "README.txt")
            read(v)
            attempts = [
                lambda: open(v, "r+b"),
                lambda: open(t, "ab"),
                lambda: open(os.path.join(self.mnt, "new.txt"), "wb"),
                lambda: os.unlink(t),
                lambda: os.unlink(v),
                lambda: os.rename(t, t + ".x"),
                lambda: os.chmod(t, 0o600),
                lambda: os.truncate(t, 0),
                lambda: os.mkdir(os.path.join(self.mnt, "d")),
                lambda: os.setxattr(t, "user.x", b"1"),
            ]
            for i, a in enumerate(attempts):
                with self.assertRaises(OSError, msg=str(i)) as cm:
                    a()
                self.assertEqual(cm.exception.errno, errno.EROFS, i)
        self.assertEqual(tree_bytes(self.src), tree_bytes(EXAMPLES))

    def test_hide_sources_and_formats(self):
        with self.mount("hide_sources", "formats=gmf:dem"):
            names = sorted(os.listdir(os.path.join(self.mnt, "crate")))
            self.assertEqual(names, ["crate.dem", "crate.gmf", "crate.mtl", "textures"])
            self.assertFalse(os.path.exists(os.path.join(self.mnt, "crate", "crate.obj")))
            self.assertFalse(os.path.exists(os.path.join(self.mnt, "crate", "crate.fmd")))

    def test_same_stem_models_get_long_names(self):
        shutil.copy(os.path.join(CORPUS, "OBJ", "box.obj"), os.path.join(self.src, "props", "cone.obj"))
        with open(os.path.join(self.src, "props", "tetra.fmd"), "wb") as f:
            f.write(b"a real file named like a view")
        with self.mount():
            names = set(os.listdir(os.path.join(self.mnt, "props")))
            for f in FORMATS:
                self.assertIn(f"cone.ply.{f}", names)
                self.assertIn(f"cone.obj.{f}", names)
                self.assertNotIn(f"cone.{f}", names)
                self.assertIn(f"tetra.stl.{f}", names)
            self.assertEqual(read(os.path.join(self.mnt, "props", "tetra.fmd")), b"a real file named like a view")
            self.assertNotEqual(read(os.path.join(self.mnt, "props", "cone.ply.gmf")),
                                read(os.path.join(self.mnt, "props", "cone.obj.gmf")))


def quietly(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass


class AbortedTest(TreeCase):
    """A mount whose connection is aborted (a crashed kernel side, `echo 1 >
    /sys/fs/fuse/connections/N/abort`) with a file and a listing still open
    gets no RELEASE for them: the daemon exits 0 and frees their handles
    itself, which the ASan+UBSan run of this test checks (Mount fails on a
    leak report)."""

    @unittest.skipUnless(os.geteuid() == 0, "needs root (fusectl)")
    def test_handles_open_at_abort_are_freed(self):
        os.makedirs(os.path.join(self.src, "d"))
        with open(os.path.join(self.src, "d", "a.obj"), "w") as f:
            f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        ctl = "/sys/fs/fuse/connections"
        with open("/proc/mounts") as mounts:
            if not any(l.split()[2] == "fusectl" for l in mounts):
                subprocess.run(["mount", "-t", "fusectl", "none", ctl], check=True)
        with Mount(self.src, self.mnt, self.cache) as m:
            d = os.open(os.path.join(self.mnt, "d"), os.O_RDONLY | os.O_DIRECTORY)
            listing = os.scandir(d)
            self.assertTrue(next(listing).name)
            f = os.open(os.path.join(self.mnt, "d", "a.gmf"), os.O_RDONLY)
            self.assertTrue(os.read(f, 4))
            # closed after the abort (errors are the dead connection's)
            self.addCleanup(quietly, os.close, f)
            self.addCleanup(quietly, listing.close)
            with open(os.path.join(ctl, str(os.minor(os.stat(self.mnt).st_dev)), "abort"),
                      "w") as a:
                a.write("1")
            self.assertEqual(m.proc.wait(timeout=30), 0, m.output())


class OtherFileSystemsInsideSrcTest(TreeCase):
    """Two tmpfs mounted inside SRC: the mount shows one st_dev for all, so
    their small inode numbers must not make different files one."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting tmpfs needs root")
        for d in ("t1", "t2"):
            path = os.path.join(self.src, d)
            os.makedirs(path)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", path], check=True)
            self.addCleanup(subprocess.run, ["umount", path])
        for d, text in (("t1", b"AAAA\n"), ("t2", b"BBBB\n")):
            with open(os.path.join(self.src, d, "f.txt"), "wb") as f:
                f.write(text)
            os.link(os.path.join(self.src, d, "f.txt"), os.path.join(self.src, d, "g.txt"))

    def test_files_on_two_tmpfs_stay_apart(self):
        self.assertEqual(os.stat(os.path.join(self.src, "t1", "f.txt")).st_ino,
                         os.stat(os.path.join(self.src, "t2", "f.txt")).st_ino)
        with Mount(self.src, self.mnt, self.cache) as m:
            inos = {}
            for d in ("t1", "t2"):
                for e in os.scandir(os.path.join(self.mnt, d)):
                    inos[(d, e.name)] = (e.inode(), e.stat(follow_symlinks=False).st_ino)
            # each pair of hard links one inode, the two folders' files two
            self.assertEqual(inos[("t1", "f.txt")], inos[("t1", "g.txt")])
            self.assertEqual(inos[("t1", "f.txt")][0], inos[("t1", "f.txt")][1])
            self.assertNotEqual(inos[("t1", "f.txt")][1], inos[("t2", "f.txt")][1])
            self.assertNotEqual(os.stat(os.path.join(self.mnt, "t1")).st_ino,
                                os.stat(os.path.join(self.mnt, "t2")).st_ino)
            # tar keeps each file's bytes (it stored t2's as links to t1's)
            out = os.path.join(self.tmp, "x")
            os.makedirs(out)
            p = subprocess.run(f"tar -cf - -C {self.mnt} t1 t2 | tar -xf - -C {out}", shell=True,
                               capture_output=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            for d, text in (("t1", b"AAAA\n"), ("t2", b"BBBB\n")):
                for f in ("f.txt", "g.txt"):
                    self.assertEqual(read(os.path.join(out, d, f)), text, (d, f))
            # du counts both trees (it skipped t2 as already seen)
            p = run(["du", "-sb", os.path.join(self.mnt, "t1"), os.path.join(self.mnt, "t2")])
            self.assertEqual(len(p.stdout.splitlines()), 2, p.stdout + p.stderr)
            self.assertTrue(m.alive())


if __name__ == "__main__":
    unittest.main()

"""Bounded memory (issue 17; docs/scale.md): with a small -o memo_size the
daemon's per-model and per-view records stay within their caps while many
models are listed and read, counted from the stats xattr, and every answer
stays right (sizes and bytes equal to meshfs-convert's, a second listing
too).  Bad values of memo_size exit 2 naming the option.  Mechanisms only,
never timings."""
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import unittest

from common import FORMATS, TreeCase, convert, mount_refused, run_tests, tool, tree_bytes
from mount import Mount

FOLDERS = 40
PER_FOLDER = 50          # 2,000 models
MEMO = 64                # -o memo_size
NAMES_CAP = 8 * MEMO     # dirmap.c and kview.c: 8 records per model
READ_FOLDERS = 4         # 200 models read through the mount


def tetra(i):
    """A 4-triangle OBJ, its fourth vertex moved so every model is its own."""
    return (f"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 {1 + i / 1000:.3f}\n"
            "f 1 3 2\nf 1 2 4\nf 2 3 4\nf 3 1 4\n")


def write_tetras(src, folders, per_folder):
    """src/dNN/mNN.obj: folders x per_folder tetrahedra, each its own."""
    n = 0
    for d in range(folders):
        folder = os.path.join(src, f"d{d:02d}")
        os.makedirs(folder)
        for i in range(per_folder):
            with open(os.path.join(folder, f"m{i:02d}.obj"), "w") as f:
                f.write(tetra(n))
            n += 1


class ScaleTest(TreeCase):
    def setUp(self):
        super().setUp()
        write_tetras(self.src, FOLDERS, PER_FOLDER)


    @staticmethod
    def settled(m):
        return m.stats_released()

    def within_caps(self, st, where):
        self.assertEqual(st["memo_size"], MEMO)
        self.assertLessEqual(st["memo_entries"], MEMO, where)
        self.assertLessEqual(st["kview_entries"], NAMES_CAP, where)
        # the cap, besides the two most recently used folders' tables
        self.assertLessEqual(st["dirmap_names"], NAMES_CAP + 2 * PER_FOLDER * len(FORMATS), where)
        self.assertEqual(st["listing_handles"], 0, where)
        self.assertEqual(st["listing_names"], 0, where)

    def test_small_memo_size_is_respected_and_answers_stay_right(self):
        # meshfs-convert over a copy of the folders read: the same layout
        # (the .fmi names the model by its path from the root)
        ref, out = os.path.join(self.tmp, "ref"), os.path.join(self.tmp, "out")
        for d in range(READ_FOLDERS):
            shutil.copytree(os.path.join(self.src, f"d{d:02d}"), os.path.join(ref, f"d{d:02d}"))
        p, _ = convert([ref], out, "--no-cache")
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = {k: v for k, v in tree_bytes(out).items()
                    if os.path.splitext(k)[1][1:] in FORMATS}
        self.assertEqual(len(expected), READ_FOLDERS * PER_FOLDER * len(FORMATS))
        # prefetch=0: conversions counted are the reads' own, so a record
        # evicted and made again without its cache entry would show
        with Mount(self.src, self.mnt, self.cache, f"memo_size={MEMO}", "prefetch=0") as m:
            # every folder listed, names only (cold: nothing converts)
            for d in range(FOLDERS):
                names = os.listdir(os.path.join(self.mnt, f"d{d:02d}"))
                self.assertEqual(len(names), PER_FOLDER * (1 + len(FORMATS)) + 1)
                self.within_caps(self.settled(m), f"listing d{d:02d}")
            st = m.stats()
            self.assertEqual(st["conversions"], 0)
            # a cold model costs the memo no record: listing 2,000 of them
            # left it empty (views.h, mfs_views_known)
            self.assertEqual((st["memo_entries"], st["memo_evictions"]), (0, 0))
            self.assertGreater(st["dirmap_evictions"], 0)
            # every view of 200 models read: 1,600 view paths through kview
            got = {}
            for rel in sorted(expected):
                path = os.path.join(self.mnt, rel)
                with open(path, "rb") as f:
                    data = f.read()
                got[rel] = data
                self.assertEqual(os.stat(path).st_size, len(data), rel)
            self.within_caps(self.settled(m), "after reading")
            for rel in expected:
                self.assertEqual(got[rel], expected[rel], rel)
            st = m.stats()
            self.assertEqual(st["conversions"], READ_FOLDERS * PER_FOLDER)
            self.assertGreater(st["kview_evictions"], 0)
            # 200 models read through a memo of MEMO: all but MEMO evicted
            self.assertGreaterEqual(st["memo_evictions"], READ_FOLDERS * PER_FOLDER - MEMO)
            # a second pass: every folder listed again, and the folders read
            # stat'ed whole (as ls -l and find -ls do: a stat of a view not
            # converted yet would convert it, so only those), then bytes
            # again.  Records evicted long ago come back from the stat index
            # and the cache: no conversion, the same sizes and bytes.
            for d in range(FOLDERS):
                folder = os.path.join(self.mnt, f"d{d:02d}")
                if d >= READ_FOLDERS:
                    self.assertEqual(len(os.listdir(folder)), PER_FOLDER * (1 + len(FORMATS)) + 1)
                    continue
                seen = 0
                for e in os.scandir(folder):
                    rel = os.path.relpath(e.path, self.mnt)
                    size = e.stat(follow_symlinks=False).st_size
                    if rel in expected:
                        self.assertEqual(size, len(expected[rel]), rel)
                        seen += 1
                self.assertEqual(seen, PER_FOLDER * len(FORMATS))
                self.within_caps(self.settled(m), f"relisting d{d:02d}")
            for rel in expected:
                with open(os.path.join(self.mnt, rel), "rb") as f:
                    self.assertEqual(f.read(), expected[rel], rel)
            st = self.settled(m)
            self.within_caps(st, "end")
            self.assertEqual(st["conversions"], READ_FOLDERS * PER_FOLDER)
            self.assertTrue(m.alive())

    def test_evicted_view_record_never_serves_a_stale_size(self):
        """kview.c: the kernel keeps a view's size and pages for a while
        after it was told them.  A record evicted from the bounded table
        must not make a later open trust what the kernel holds: the view
        of a changed model is read whole, at its new size."""
        model = os.path.join(self.src, "d00", "m00.obj")
        view = os.path.join(self.mnt, "d00", "m00.gmf")
        others = [os.path.join(self.mnt, "d01", f"m{i:02d}.{f}") for i in range(3)
                  for f in FORMATS]
        bigger = "".join(f"v {i} {i % 3} {i % 5}\n" for i in range(60)) + \
            "".join(f"f {i + 1} {i + 2} {i + 3}\n" for i in range(58))
        with Mount(self.src, self.mnt, self.cache, "memo_size=1", "prefetch=0") as m:
            for p in others:  # converted now, so that reading them later is quick
                with open(p, "rb") as f:
                    f.read()
            with open(view, "rb") as f:
                old = f.read()
            self.assertEqual(os.stat(view).st_size, len(old))  # the kernel holds it now
            with open(model, "w") as f:
                f.write(bigger)
            for p in others:  # 24 view paths through a table of 8: the view's record goes
                os.stat(p)
                with open(p, "rb") as f:
                    f.read()
            self.assertGreater(self.settled(m)["kview_evictions"], 0)
            with open(view, "rb") as f:
                new = f.read()
                size = os.fstat(f.fileno()).st_size
            self.assertGreater(len(new), len(old))
            self.assertEqual(size, len(new))
        out = os.path.join(self.tmp, "out")
        ref = os.path.join(self.tmp, "ref", "d00")
        os.makedirs(ref)
        shutil.copy(model, ref)
        p, _ = convert([os.path.join(self.tmp, "ref")], out, "--no-cache", "-f", "gmf")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "d00", "m00.gmf"), "rb") as f:
            self.assertEqual(new, f.read())

    def test_default_memo_size_is_reported(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            os.listdir(os.path.join(self.mnt, "d00"))
            st = m.stats()
            self.assertEqual(st["memo_size"], 4096)
            self.assertEqual(st["memo_evictions"], 0)
            self.assertEqual(st["memo_entries"], 0)  # cold models: no record
            for e in os.scandir(os.path.join(self.mnt, "d00")):
                if e.name.endswith(".gmf"):
                    e.stat()  # converts (prefetching its neighbours too)
            st = m.stats()
            self.assertEqual(st["memo_entries"], PER_FOLDER)
            self.assertEqual(st["memo_evictions"], 0)

    def test_a_folder_table_costs_per_model_and_a_listing_holds_it(self):
        # dirmap.c: a table is the folder's entries and its models (view
        # names are parsed, not stored), so its weight is 2 a model, not 8
        # views and a source; a listing holds the table it started with
        # instead of a copy, and finishes with the names it started with
        # though the folder changes under it
        d00 = os.path.join(self.mnt, "d00")
        per_model = 1 + len(FORMATS)
        with Mount(self.src, self.mnt, self.cache) as m:
            # the first listing (the kernel keeps none yet), in three
            # READDIRs of about 200 names: the folder gains a model after
            # the first
            with os.scandir(d00) as it:
                got = [next(it).name]
                st = m.stats()
                self.assertEqual((st["dirmap_tables"], st["dirmap_names"]), (1, 2 * PER_FOLDER))
                with open(os.path.join(self.src, "d00", "new.obj"), "w") as f:
                    f.write(tetra(99999))
                got += [e.name for e in it]
            self.assertEqual(len(got), PER_FOLDER * per_model + 1)
            self.assertEqual(len(set(got)), len(got))
            self.assertNotIn("new.obj", got)
            self.assertIn("m49.gmf", got)
            again = sorted(os.listdir(d00))
            self.assertEqual(len(again), PER_FOLDER * per_model + 1 + per_model)
            self.assertIn("new.obj", again)
            self.assertIn("new.gmf", again)
            st = self.settled(m)
            self.assertEqual(st["dirmap_names"], 2 * (PER_FOLDER + 1))
            self.assertEqual(st["listing_names"], 0)

    def test_bad_memo_size_exits_2(self):
        os.makedirs(self.mnt)
        for value, why in [("0", "must be at least 1"), ("-5", "not a whole number"),
                           ("12abc", "not a whole number"), ("", "not a whole number"),
                           ("1e6", "not a whole number"), ("999999999999", "at most")]:
            with self.subTest(value=value):
                o = f"cache_dir={self.cache},memo_size={value}"
                p = mount_refused(self.src, self.mnt, o)
                self.assertEqual(p.returncode, 2, f"{value}: {p.stderr}")
                self.assertIn(f"-o memo_size={value}", p.stderr)
                self.assertIn(why, p.stderr)


def grid(n):
    """An OBJ grid of 2(n-1)^2 triangles: its views pass 16 KiB, so they are
    entry files of their own, not inside the model entry."""
    lines = [f"v {i} {((i * j) % 7) * 0.1} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


class FolderRecordTest(TreeCase):
    """A warm listing opens one file for its folder (docs/cache.md, "Folder
    records"), not one a model: counted by cache_files_opened, with the
    sizes equal to meshfs-convert's."""

    N = 40

    def write_tree(self, root, salt):
        d = os.path.join(root, "d")
        os.makedirs(d)
        for i in range(self.N):
            with open(os.path.join(d, f"m{i:02d}.obj"), "w") as f:
                f.write(tetra(salt + i))
        with open(os.path.join(d, "big.obj"), "w") as f:
            f.write(grid(40))
        with open(os.path.join(d, "mat.mtl"), "w") as f:
            f.write("newmtl red\nKd 1 0 0\n")
        with open(os.path.join(d, "mat.obj"), "w") as f:
            f.write("mtllib mat.mtl\nusemtl red\n" + tetra(salt + 999))

    def setUp(self):
        super().setUp()
        self.write_tree(self.src, 0)
        self.models = self.N + 2
        # past the stat index's racy window (docs/cache.md): a file written
        # in the last 2 s is hashed on every use, never recorded, so a
        # listing could not know it
        time.sleep(2.1)

    def sizes(self):
        """{name: size} of MNT/d as `ls -l` gets them (readdirplus)."""
        return {e.name: e.stat(follow_symlinks=False).st_size
                for e in os.scandir(os.path.join(self.mnt, "d"))}

    def test_a_listing_opens_one_file_for_its_folder(self):
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = {os.path.basename(k): len(v) for k, v in tree_bytes(out).items()
                    if os.path.splitext(k)[1][1:] in FORMATS}
        self.assertEqual(len(expected), self.models * len(FORMATS))
        self.assertGreater(expected["big.gmf"], 16384)
        with Mount(self.src, self.mnt, self.cache) as m:  # converts every model
            got = self.sizes()
            self.assertEqual(m.stats()["conversions"], self.models)
        self.assertEqual({k: got[k] for k in expected}, expected)

        # a fresh mount: no record yet, so each model entry is opened once
        # (the large views' sizes are in it: their files are not opened)
        with Mount(self.src, self.mnt, self.cache) as m:
            got = self.sizes()
            st = ScaleTest.settled(m)
        self.assertEqual({k: got[k] for k in expected}, expected)
        self.assertEqual(st["conversions"], 0)
        self.assertEqual(st["cache_files_opened"], self.models)
        self.assertEqual((st["folder_record_hits"], st["folder_records_written"]), (0, 1))

        # and the next: one file for the whole folder, every size still right,
        # no lookup a name
        with Mount(self.src, self.mnt, self.cache) as m:
            got = self.sizes()
            st = ScaleTest.settled(m)
        self.assertEqual({k: got[k] for k in expected}, expected)
        self.assertEqual(st["cache_files_opened"], 1, st)
        self.assertEqual((st["folder_record_hits"], st["folder_records_written"]), (self.models, 0))
        self.assertLess(st["attr_requests"], 5)
        self.assertEqual(st["conversions"], 0)
        # what meshfs-cache counts: a model entry a model, every small view
        # inside one (big.obj's four large ones are files of their own)
        p = subprocess.run([tool("meshfs-cache"), "--cache-dir", self.cache, "--json", "stats"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.loads(p.stdout)
        large = sum(1 for k, n in expected.items() if n > 16384)
        self.assertEqual(large, 4)
        self.assertEqual((s["model_entries"], s["folder_records"], s["entry_files"]),
                         (self.models, 1, large))
        # entries: every stored view, the small ones inside model entries too
        self.assertEqual(s["entries"], self.models * len(FORMATS))
        self.assertEqual(s["views_inside"], self.models * len(FORMATS) - large)

        # a changed model: its copy no longer fits (it is not known without
        # hashing it, so its views are listed by name); the others still do
        with open(os.path.join(self.src, "d", "m00.obj"), "w") as f:
            f.write(tetra(777))
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertIn("m00.gmf", os.listdir(os.path.join(self.mnt, "d")))
            st = ScaleTest.settled(m)
        self.assertEqual(st["cache_files_opened"], 1, st)
        self.assertEqual(st["folder_record_hits"], self.models - 1)
        self.assertEqual(st["conversions"], 0)

        # another tree, the same folder path and names, other bytes but for
        # big.obj: the record is read, only big.obj's copy fits, and no
        # size is wrong
        other = os.path.join(self.tmp, "other")
        self.write_tree(other, 500)
        time.sleep(2.1)
        out2 = os.path.join(self.tmp, "out2")
        p, _ = convert([other], out2)
        self.assertEqual(p.returncode, 0, p.stderr)
        with Mount(other, self.mnt, self.cache) as m:
            for name in os.listdir(os.path.join(self.mnt, "d")):
                os.stat(os.path.join(self.mnt, "d", name))  # converts each model
        with Mount(other, self.mnt, self.cache) as m:
            got = self.sizes()
            st = ScaleTest.settled(m)
        want = {os.path.basename(k): len(v) for k, v in tree_bytes(out2).items()
                if os.path.splitext(k)[1][1:] in FORMATS}
        self.assertEqual({k: got[k] for k in want}, want)
        # only big.obj fits: the same bytes at the same path in both trees,
        # so its copy is right for both (keys name content, not trees)
        self.assertEqual(st["folder_record_hits"], 1)
        self.assertEqual(st["folder_records_written"], 1)

    def test_a_memo_smaller_than_the_folder_still_opens_one_file(self):
        # The listing's package (game_resources.lgepkg) stats every model of
        # the folder; with memo_size below the folder's models each one was
        # read from its model entry again (an LRU sweep misses every time):
        # 42 files opened instead of the record alone.  memo_size=16: the
        # folder's 42 models do not fit, its 421 names do fit the inodes the
        # kernel may keep (32 x memo_size).  Under memo_size=8 (256) the
        # daemon had the kernel forget names the listing had just sent, and
        # when that beat scandir's stats, each such stat was a LOOKUP that
        # read its model's entry (a CI failure: 5 files opened, 27 lookups).
        with Mount(self.src, self.mnt, self.cache) as m:  # converts every model
            want = self.sizes()
            self.assertEqual(m.stats()["conversions"], self.models)
        self.assertIn("game_resources.lgepkg", want)
        self.assertLess(len(want), 32 * 16)
        for _ in range(2):  # the first writes the record, the second reads it
            with Mount(self.src, self.mnt, self.cache, "memo_size=16") as m:
                got = self.sizes()
                st = ScaleTest.settled(m)
            self.assertEqual(got, want)
            self.assertEqual(st["conversions"], 0)
        self.assertEqual(st["memo_size"], 16)
        self.assertEqual(st["inode_drops"], 0, st)
        self.assertGreater(st["memo_evictions"], 0)
        # the record, and the first model's entry once more: whether the
        # package is shown asks whether the folder's first model failed
        # (pkgempty.c), and the memo no longer holds it
        self.assertLessEqual(st["cache_files_opened"], 2, st)
        self.assertEqual((st["folder_record_hits"], st["folder_records_written"]), (self.models, 0))


INODE_MEMO = 8                 # -o memo_size
INODE_CAP = 32 * INODE_MEMO    # files whose inodes the kernel may hold
INODE_FOLDERS, INODE_PER = 10, 100


class InodeCapTest(TreeCase):
    """The inodes the kernel holds (src/session/nodes.c; docs/scale.md, "The
    kernel's inodes"): beyond 32 x memo_size files the daemon tells the
    kernel to drop the least recently used files' entries, and the FORGETs
    that follow free their nodes.  Counted from the stats xattr.  A shell's
    working directory inside the mount, a file held open and every answer
    (names, sizes, bytes) stay right across it."""

    def setUp(self):
        super().setUp()
        write_tetras(self.src, INODE_FOLDERS, INODE_PER)

    def under_cap(self, m):
        """The stats once the files held are back under the cap: the kernel
        forgets asynchronously, after the daemon's notifications."""
        for _ in range(500):
            st = m.stats()
            if st["inode_files"] <= INODE_CAP:
                break
            time.sleep(0.02)
        self.assertLessEqual(st["inode_files"], INODE_CAP, st)
        return st

    def sources(self):
        return sorted(os.path.join(f"d{d:02d}", f"m{i:02d}.obj")
                      for d in range(INODE_FOLDERS) for i in range(INODE_PER))

    def test_the_kernel_drops_least_recently_used_files(self):
        child = ("import os, sys\n"
                 "sys.stdin.readline()\n"
                 "print(os.getcwd())\n"
                 "print(len(os.listdir('.')))\n"
                 "print(os.stat('m05.obj').st_size)\n")
        with Mount(self.src, self.mnt, self.cache, f"memo_size={INODE_MEMO}", "prefetch=0") as m:
            self.assertEqual(m.stats()["inode_cap"], INODE_CAP)
            view = os.path.join(self.mnt, "d00", "m01.gmf")
            with open(view, "rb") as f:
                before = f.read()
            held_path = os.path.join(self.mnt, "d00", "m00.obj")
            held = open(held_path, "rb")
            self.addCleanup(held.close)
            head = held.read(10)
            cwd = os.path.join(self.mnt, "d01")
            shell = subprocess.Popen([sys.executable, "-c", child], cwd=cwd, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.addCleanup(shell.kill)
            # every source stat'ed through the mount: 1,000 files' inodes
            for rel in self.sources():
                st = os.stat(os.path.join(self.mnt, rel))
                self.assertEqual(st.st_size, os.stat(os.path.join(self.src, rel)).st_size, rel)
            st = self.under_cap(m)
            self.assertGreaterEqual(st["inode_drops"], len(self.sources()) - INODE_CAP)
            self.assertGreaterEqual(st["inodes_freed"], len(self.sources()) - INODE_CAP)
            # the shell inside the mount still knows where it is
            out, _ = shell.communicate("go\n", timeout=30)
            where, count, size = out.split()
            self.assertEqual(where, cwd)
            self.assertEqual(int(count), INODE_PER * (1 + len(FORMATS)) + 1)
            self.assertEqual(int(size), os.stat(os.path.join(self.src, "d01", "m05.obj")).st_size)
            # the open file reads on, and was never shown as deleted
            with open(os.path.join(self.src, "d00", "m00.obj"), "rb") as f:
                self.assertEqual(head + held.read(), f.read())
            self.assertEqual(os.readlink(f"/proc/self/fd/{held.fileno()}"), held_path)
            # names dropped are looked up again: the same answers
            for rel in self.sources():
                a, b = os.stat(os.path.join(self.mnt, rel)), os.stat(os.path.join(self.src, rel))
                self.assertEqual((a.st_size, a.st_mtime_ns), (b.st_size, b.st_mtime_ns), rel)
            with open(view, "rb") as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(m.stats()["conversions"], 1)

    def test_concurrent_lookups_reads_and_drops(self):
        # Four threads stat, list and read across the tree while the cap
        # (256 files) makes the daemon drop entries the whole time: every
        # answer right, the daemon up, and the files held back under the
        # cap once it is over.
        srcs = self.sources()
        with open(os.path.join(self.src, srcs[0]), "rb") as f:
            first = f.read()
        with Mount(self.src, self.mnt, self.cache, f"memo_size={INODE_MEMO}", "prefetch=0") as m:
            view = os.path.join(self.mnt, "d00", "m00.gmf")
            with open(view, "rb") as f:
                gmf = f.read()
            errors = []

            def worker(seed):
                rnd = random.Random(seed)
                try:
                    for _ in range(600):
                        rel = rnd.choice(srcs)
                        op = rnd.randrange(4)
                        if op == 0:
                            a = os.stat(os.path.join(self.mnt, rel))
                            b = os.stat(os.path.join(self.src, rel))
                            if (a.st_size, a.st_mtime_ns) != (b.st_size, b.st_mtime_ns):
                                errors.append(f"stat {rel}")
                        elif op == 1:
                            folder = os.path.dirname(rel)
                            if len(os.listdir(os.path.join(self.mnt, folder))) != \
                                    INODE_PER * (1 + len(FORMATS)) + 1:
                                errors.append(f"listdir {folder}")
                        elif op == 2:
                            with open(os.path.join(self.mnt, srcs[0]), "rb") as f:
                                if f.read() != first:
                                    errors.append("read source")
                        else:
                            with open(view, "rb") as f:
                                if f.read() != gmf:
                                    errors.append("read view")
                except OSError as e:
                    errors.append(repr(e))

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            self.assertEqual(errors, [])
            st = self.under_cap(m)
            self.assertGreater(st["inode_drops"], 0)
            self.assertEqual(st["conversions"], 1)

    def test_cache_times_are_checked(self):
        os.makedirs(self.mnt)
        for opt, value, why in [("entry_timeout", "abc", "seconds"),
                                ("attr_timeout", "-1", "seconds"),
                                ("negative_timeout", "1e3", "seconds")]:
            with self.subTest(opt=opt, value=value):
                o = f"cache_dir={self.cache},{opt}={value}"
                p = mount_refused(self.src, self.mnt, o)
                self.assertEqual(p.returncode, 2, f"{value}: {p.stderr}")
                self.assertIn(f"-o {opt}={value}", p.stderr)
        # 0 is a time too: nothing kept, every stat asks the daemon
        with Mount(self.src, self.mnt, self.cache, "entry_timeout=0", "attr_timeout=0") as m:
            path = os.path.join(self.mnt, "d00", "m00.obj")
            os.stat(path)
            before = m.stats()["attr_requests"]
            os.stat(path)
            os.stat(path)
            self.assertGreaterEqual(m.stats()["attr_requests"], before + 2)


if __name__ == "__main__":
    run_tests()

"""meshfs-convert for build pipelines (issue 12): incremental through the
mount's cache and keys, the progress line, --copy-other (a tree equal to
`cp -r` of the mount), names with a newline, and `meshfs-cache warm`."""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, run, tempdir, tool  # noqa: E402
from mount import Mount  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
# the five models of examples/assets, as their paths under it
MODELS = ["characters/strip.gltf", "crate/crate.obj", "props/cone.ply", "props/tetra.stl",
          "scene/street.dae"]
SUMMARY = re.compile(r"meshfs-convert: (\d+) converted, (\d+) up to date, (\d+) failed\n")
BAD_OBJ = "v 0 0 0\nf 1 2 3\n"  # a face on vertices that do not exist


def summary(p):
    m = SUMMARY.findall(p.stderr)
    if len(m) != 1:
        raise AssertionError(f"no single summary line (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
    return tuple(int(x) for x in m[0])


def tree(root):
    """{relative path: ('dir',) | ('link', target) | ('file', bytes)}, links not followed."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def read_every_file(root):
    n = 0
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                with open(p, "rb") as fh:
                    fh.read()
                n += 1
    return n


def mtimes(root):
    return {os.path.relpath(os.path.join(d, f), root): os.lstat(os.path.join(d, f)).st_mtime_ns
            for d, _, fs in os.walk(root) for f in fs}


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(EXAMPLES, self.src, symlinks=True)
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def convert(self, *args, out="out", cache=True, src=None, env=None):
        argv = [tool("meshfs-convert"), "-o", os.path.join(self.tmp, out)]
        if cache:
            argv += ["--cache-dir", self.cache]
        argv += list(args) + [src or self.src]
        return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)

    def report(self, *args, **kw):
        rpath = os.path.join(self.tmp, "report.json")
        p = self.convert("--report", rpath, *args, **kw)
        with open(rpath) as f:
            return p, {r["model"]: r for r in map(json.loads, f) if "model" in r}


class Incremental(Base):
    def test_second_run_converts_nothing_and_leaves_outputs_alone(self):
        p = self.convert()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (5, 0, 0))
        out = os.path.join(self.tmp, "out")
        before, stamps = tree(out), mtimes(out)
        p = self.convert()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (0, 5, 0))
        self.assertEqual(tree(out), before)
        # unchanged views are not rewritten: rsync -a sends nothing
        views = {k: v for k, v in mtimes(out).items() if not k.endswith(".lgepkg")}
        self.assertEqual(views, {k: v for k, v in stamps.items() if k in views})
        self.assertGreater(len(views), 30)

    def test_changed_model_reconverts_exactly_that_one(self):
        self.assertEqual(summary(self.convert()), (5, 0, 0))
        # a touch alone changes no byte: the views are keyed by content
        os.utime(os.path.join(self.src, "props", "tetra.stl"))
        self.assertEqual(summary(self.convert()), (0, 5, 0))
        with open(os.path.join(self.src, "crate", "crate.obj"), "a") as f:
            f.write("# edited\n")
        p, rows = self.report()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (1, 4, 0))
        self.assertEqual(rows["crate/crate.obj"]["state"], "converted")
        self.assertEqual(sorted(m for m, r in rows.items() if r["state"] == "up to date"),
                         sorted(set(MODELS) - {"crate/crate.obj"}))

    def test_edited_dependency_reconverts_its_model(self):
        self.assertEqual(summary(self.convert()), (5, 0, 0))
        for dep, model in (("crate/crate.mtl", "crate/crate.obj"),
                           ("characters/textures/strip.png", "characters/strip.gltf"),
                           ("scene/textures/asphalt.png", "scene/street.dae")):
            with self.subTest(dep=dep):
                # bytes after the end: the model still reads the same way
                with open(os.path.join(self.src, dep), "ab") as f:
                    f.write(b"\n# edited\n" if dep.endswith(".mtl") else b"\0trailing")
                p, rows = self.report()
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(summary(p), (1, 4, 0))
                self.assertEqual(rows[model]["state"], "converted")
                self.assertIn(dep, rows[model]["deps"])

    def test_report_from_the_cache_matches_the_conversion(self):
        p1, first = self.report()
        p2, second = self.report()
        self.assertEqual(summary(p2), (0, 5, 0))
        for m in MODELS:
            for k in ("meshes", "vertices", "triangles", "min", "max", "deps", "outputs"):
                self.assertEqual(first[m][k], second[m][k], (m, k))

    def test_failure_is_remembered_until_touched(self):
        bad = os.path.join(self.src, "bad.obj")
        with open(bad, "w") as f:
            f.write(BAD_OBJ)
        p = self.convert()
        self.assertEqual(p.returncode, 1)
        self.assertEqual(summary(p), (5, 0, 1))
        self.assertNotIn("remembered", p.stderr)
        p = self.convert()
        self.assertEqual(p.returncode, 1)
        self.assertEqual(summary(p), (0, 5, 1))
        self.assertRegex(p.stderr, r"bad\.obj: .*\(remembered from an earlier conversion")
        # more room than it failed under: tried again (the mount's rule)
        p = self.convert("--timeout", "120")
        self.assertEqual(summary(p), (0, 5, 1))
        self.assertNotIn("remembered", p.stderr)
        p, rows = self.report("--timeout", "120")
        self.assertIn("remembered", p.stderr)
        self.assertEqual((rows["bad.obj"]["state"], rows["bad.obj"]["remembered"]), ("failed", True))
        self.assertEqual(rows["crate/crate.obj"]["remembered"], False)
        st = os.stat(bad)
        os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        p = self.convert()
        self.assertEqual(summary(p), (0, 5, 1))
        self.assertIn("bad.obj", p.stderr)
        self.assertNotIn("remembered", p.stderr)  # tried again, failed again

    def test_rewrites_an_output_that_differs(self):
        self.convert()
        fmd = os.path.join(self.tmp, "out", "crate", "crate.fmd")
        with open(fmd, "rb") as f:
            good = f.read()
        with open(fmd, "wb") as f:
            f.write(b"stale")
        p = self.convert()
        self.assertEqual(summary(p), (0, 5, 0))
        with open(fmd, "rb") as f:
            self.assertEqual(f.read(), good)

    def test_a_view_shares_its_cache_entrys_extents_where_the_file_system_can(self):
        """On XFS (a loop image; mkfs.xfs makes it with reflink) a view kept
        in an entry file of its own is cloned into the output (FICLONE):
        filefrag says its extents are shared, and a second output tree
        costs the disk almost nothing.  The bytes are those an ext4 run
        writes, where the clone fails and the tool copies."""
        img, xfs = os.path.join(self.tmp, "xfs.img"), os.path.join(self.tmp, "xfs")
        with open(img, "wb") as f:
            f.truncate(320 << 20)
        subprocess.run(["mkfs.xfs", "-q", img], check=True)
        os.mkdir(xfs)
        r = subprocess.run(["mount", "-o", "loop", img, xfs], capture_output=True, text=True)
        if r.returncode:
            self.skipTest("cannot mount a loop device: " + r.stderr.strip())
        try:
            src = os.path.join(xfs, "src")
            os.mkdir(src)
            n = 150
            with open(os.path.join(src, "g.obj"), "w") as f:
                f.writelines(f"v {i} {j} {(i * j) % 11}\n" for i in range(n) for j in range(n))
                for i in range(n - 1):
                    for j in range(n - 1):
                        a = i * n + j + 1
                        f.write(f"f {a} {a + 1} {a + n}\nf {a + 1} {a + n + 1} {a + n}\n")
            args = ["-f", "fmd,gmf,dem,vrt,tri", src]
            cache = os.path.join(xfs, "cache")
            for out in ("out1", "out2"):
                p = run([tool("meshfs-convert"), "-q", "--cache-dir", cache, "-o",
                         os.path.join(xfs, out)] + args)
                self.assertEqual(p.returncode, 0, p.stderr)
                os.sync()
                if out == "out1":
                    st = os.statvfs(xfs)
                    used = (st.f_blocks - st.f_bfree) * st.f_frsize
            st = os.statvfs(xfs)
            grew = (st.f_blocks - st.f_bfree) * st.f_frsize - used
            p = run([tool("meshfs-convert"), "-q", "--no-cache", "-o",
                     os.path.join(self.tmp, "ext4")] + args)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = tree(os.path.join(self.tmp, "ext4"))
            self.assertEqual(tree(os.path.join(xfs, "out2")), want)
            big = [k for k, v in want.items() if len(v[1]) > 65536]
            self.assertGreaterEqual(len(big), 3, {k: len(v[1]) for k, v in want.items()})
            for k in big:
                r = run(["filefrag", "-v", os.path.join(xfs, "out2", k)])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("shared", r.stdout, k)
            size = sum(len(want[k][1]) for k in big)
            self.assertLess(grew, size // 10, (grew, size))
        finally:
            subprocess.run(["umount", xfs], check=True)

    def test_no_cache_converts_everything_and_keeps_nothing(self):
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.mkdir(tmpdir)
        env = dict(os.environ, TMPDIR=tmpdir)
        for _ in range(2):
            p = self.convert("--no-cache", cache=False, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(summary(p), (5, 0, 0))
        self.assertEqual(os.listdir(tmpdir), [])
        self.assertFalse(os.path.exists(self.cache))

    def test_no_cache_needs_room_in_tmpdir_for_the_models_in_flight_only(self):
        """A run's views far larger than TMPDIR (a 3 MiB tmpfs, as /tmp is
        on many systems a slice of RAM): each model's entries leave the
        private cache once it is resolved.  The private cache used to keep
        every view of the run until its end, and failed here with ENOSPC
        from the fourth model on."""
        src = os.path.join(self.tmp, "grids")
        os.mkdir(src)
        n = 60
        for m in range(16):
            with open(os.path.join(src, f"g{m:02d}.obj"), "w") as f:
                f.writelines(f"v {i} {j} {(i * j + m) % 7}\n" for i in range(n) for j in range(n))
                for i in range(n - 1):
                    for j in range(n - 1):
                        a = i * n + j + 1
                        f.write(f"f {a} {a + 1} {a + n}\nf {a + 1} {a + n + 1} {a + n}\n")
        tmpdir = os.path.join(self.tmp, "small")
        os.mkdir(tmpdir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", tmpdir], check=True)
        try:
            env = dict(os.environ, TMPDIR=tmpdir)
            ref = self.convert(src=src, out="ref")
            self.assertEqual(summary(ref), (16, 0, 0), ref.stderr)
            want = tree(os.path.join(self.tmp, "ref"))
            self.assertGreater(sum(len(v[1]) for v in want.values() if v[0] == "file"), 5 << 20)
            for jobs in ("1", "2"):
                with self.subTest(jobs=jobs):
                    out = "nc" + jobs
                    p = self.convert("--no-cache", "-j", jobs, cache=False, src=src, out=out, env=env)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(summary(p), (16, 0, 0))
                    self.assertNotIn("No space left", p.stderr)
                    self.assertEqual(tree(os.path.join(self.tmp, out)), want)
                    self.assertEqual(os.listdir(tmpdir), [])
        finally:
            subprocess.run(["umount", tmpdir], check=True)

    def test_no_cache_removes_what_a_killed_run_left(self):
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.mkdir(tmpdir)
        env = dict(os.environ, TMPDIR=tmpdir)
        gone = subprocess.Popen(["true"])
        gone.wait()
        # a killed run's private cache (its process is gone), a live
        # process's, and names that are not meshfs-convert's
        orphan = os.path.join(tmpdir, f"meshfs-convert-{gone.pid}-a1B2c3")
        live = os.path.join(tmpdir, f"meshfs-convert-{os.getpid()}-x9Y8z7")
        others = [os.path.join(tmpdir, n) for n in ("meshfs-convert-XXXXXX", "mine")]
        for d in [orphan, live] + others:
            os.makedirs(os.path.join(d, "v2", "ab"))
            with open(os.path.join(d, "v2", "ab", "entry"), "w") as f:
                f.write("x")
        p = self.convert("--no-cache", cache=False, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(tmpdir)), sorted(os.path.basename(d) for d in [live] + others))


class SeveralInputs(Base):
    """Inputs merge under one output folder, as `cp -r IN1/. IN2/. OUT` merges
    them.  Two inputs' models that would write the same view names used to
    be converted side by side with -j2 into the same files, whichever
    thread ended last winning; a file named twice was converted twice."""

    def two_inputs(self):
        a, b = os.path.join(self.tmp, "in1"), os.path.join(self.tmp, "in2")
        for d in (a, b):
            os.makedirs(os.path.join(d, "sub"))
        shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(a, "sub", "m.stl"))
        shutil.copy(os.path.join(self.src, "props", "cone.ply"), os.path.join(b, "sub", "m.ply"))
        shutil.copy(os.path.join(self.src, "crate", "crate.obj"), os.path.join(b, "c.obj"))
        return a, b

    def test_a_clash_is_refused_and_the_first_input_keeps_its_names(self):
        a, b = self.two_inputs()
        ref = self.convert(src=a, out="ref")
        self.assertEqual(summary(ref), (1, 0, 0), ref.stderr)
        want = tree(os.path.join(self.tmp, "ref", "sub"))
        for jobs in ("1", "2"):
            with self.subTest(jobs=jobs):
                p = self.convert("--no-cache", "-j", jobs, a, cache=False, src=b, out="o" + jobs)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(summary(p), (2, 0, 1))
                shown = os.path.join(b, "sub", "m.ply")
                self.assertIn(f"FAILED {shown}: not converted: its views would have the names of "
                              f"{os.path.join(a, 'sub', 'm.stl')}'s; convert the two inputs into "
                              "separate output folders\n", p.stdout)
                out = os.path.join(self.tmp, "o" + jobs)
                self.assertEqual(tree(os.path.join(out, "sub")), want)
                self.assertTrue(os.path.exists(os.path.join(out, "c.fmd")))

    def test_a_file_named_twice_is_converted_once(self):
        a, _ = self.two_inputs()
        m = os.path.join(a, "sub", "m.stl")
        p = self.convert("--no-cache", "-j", "2", m, os.path.join(a, "sub"), a + "/sub/", cache=False,
                         src=m)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (1, 0, 0))
        self.assertEqual(p.stdout.count("ok "), 2, p.stdout)  # the model and its package
        self.assertIn("(1 of 1 models)", p.stdout)

    def test_a_clashing_file_named_twice_fails_once(self):
        a, b = self.two_inputs()
        m = os.path.join(b, "sub", "m.ply")
        p = self.convert("--no-cache", a, b, cache=False, src=b)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(summary(p), (2, 0, 1))
        self.assertEqual(p.stdout.count(f"FAILED {m}: not converted"), 1, p.stdout)

    def test_no_cache_models_at_one_path_under_two_inputs_are_each_converted(self):
        """Keys hold a model's path under its input, so identical models at
        one path under two inputs share their entries when their view names
        differ only in the .fmi (here in1's folder also has m.obj, so its
        m.stl's views are m.stl.*, and only .gmf is asked for).  --no-cache
        removes a model's entries once it is resolved; a resolve of the
        other that began in between found them and was counted up to date,
        its report lacking the importer's statistics, or lost them half
        way.  The test build's holds (engine.c) open that window on every
        run: in1's model keeps its entries 1 s, in2's starts 0.3 s late."""
        a, b = (os.path.join(self.tmp, d) for d in ("in1", "in2"))
        for d in (a, b):
            os.makedirs(d)
            shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(d, "m.stl"))
        shutil.copy(os.path.join(self.src, "crate", "crate.obj"), os.path.join(a, "m.obj"))
        rpath = os.path.join(self.tmp, "report.json")
        env = dict(os.environ, MESHFS_TEST_BATCH_HOLD_END="/in1",
                   MESHFS_TEST_BATCH_HOLD_START="/in2")
        p = self.convert("--no-cache", "-j", "2", "-f", "gmf", "--report", rpath,
                         os.path.join(a, "m.stl"), cache=False, src=os.path.join(b, "m.stl"),
                         env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (2, 0, 0))
        with open(rpath) as f:
            rows = [json.loads(x) for x in f]
        self.assertEqual([(r["root"], r["state"], r["triangles"]) for r in rows],
                         [(a, "converted", 4), (b, "converted", 4)])
        out = os.path.join(self.tmp, "out")
        self.assertEqual(sorted(os.listdir(out)), ["m.gmf", "m.stl.gmf"])


class SharedWithTheMount(Base):
    def read_mount(self, cache, *opts):
        mnt = os.path.join(self.tmp, "mnt")
        with Mount(self.src, mnt, cache, *opts) as m:
            files = read_every_file(mnt)
            views = {k: v for k, v in tree(mnt).items()
                     if v[0] == "file" and not k.endswith(tuple(os.path.splitext(x)[1] for x in MODELS))}
            return m.stats()["conversions"], files, views

    def test_mount_fills_the_cache_then_convert_is_up_to_date(self):
        conversions, files, _ = self.read_mount(self.cache)
        self.assertEqual(conversions, 5)
        self.assertGreater(files, 40)
        p = self.convert()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (0, 5, 0))

    def test_convert_fills_the_cache_then_the_mount_converts_nothing(self):
        self.assertEqual(summary(self.convert()), (5, 0, 0))
        conversions, _, views = self.read_mount(self.cache)
        self.assertEqual(conversions, 0)
        out = tree(os.path.join(self.tmp, "out"))
        for k, v in views.items():
            if k in out:
                self.assertEqual(out[k], v, k)
        self.assertGreater(len([k for k in views if k in out]), 40)

    def test_other_options_other_keys(self):
        # the recipe is shared, options included, formats not: a mount
        # showing only .fmd made the .fmd a convert of more formats reads
        self.read_mount(self.cache, "formats=fmd")
        self.assertEqual(summary(self.convert("-f", "fmd")), (0, 5, 0))
        self.assertEqual(summary(self.convert("-f", "fmd:gmf")), (5, 0, 0))  # .gmf made
        self.assertEqual(summary(self.convert("-f", "fmd:gmf")), (0, 5, 0))
        # an option .fmd reads keys .fmd apart
        self.assertEqual(summary(self.convert("-f", "fmd", "--fmd-raw")), (5, 0, 0))

    def test_warm_then_mount_converts_nothing(self):
        p = run([tool("meshfs-cache"), "--cache-dir", self.cache, "warm", self.src])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "warm: 5 converted, 0 up to date, 0 failed\n")
        p = run([tool("meshfs-cache"), "--cache-dir", self.cache, "--json", "warm", self.src])
        self.assertEqual(json.loads(p.stdout),
                         {"src": self.src, "converted": 0, "up_to_date": 5, "failed": 0,
                          "no_mesh": 0, "unwalked": 0})
        conversions, files, views = self.read_mount(self.cache)
        self.assertEqual(conversions, 0)
        # the same bytes a fresh conversion makes
        p = self.convert("--no-cache", cache=False, out="fresh")
        self.assertEqual(p.returncode, 0, p.stderr)
        fresh = tree(os.path.join(self.tmp, "fresh"))
        self.assertEqual({k: v for k, v in views.items() if k in fresh},
                         {k: v for k, v in fresh.items() if v[0] == "file"})

    def test_warm_with_mount_options(self):
        p = run([tool("meshfs-cache"), "--cache-dir", self.cache, "warm", self.src,
                 "--formats", "fmd:gmf", "-j", "2", "--lowercase-names"])
        self.assertEqual(p.returncode, 0, p.stderr)
        conversions, _, _ = self.read_mount(self.cache, "formats=fmd:gmf", "lowercase_names")
        self.assertEqual(conversions, 0)

    def test_warm_bad_usage(self):
        for args, code, text in ((["warm"], 2, "missing SRC"),
                                 (["warm", self.src, "--formats", "nope"], 2, "--formats=nope"),
                                 (["warm", self.src, "-j", "0"], 2, "--jobs"),
                                 (["warm", self.src, "--bogus"], 2, "unknown option '--bogus'"),
                                 (["warm", self.src, self.src], 2, "unexpected argument"),
                                 # a bad SRC is a bad argument (2); 3 is the cache's
                                 (["warm", os.path.join(self.tmp, "none")], 2, "No such file")):
            with self.subTest(args=args):
                p = run([tool("meshfs-cache"), "--cache-dir", self.cache] + args)
                self.assertEqual(p.returncode, code, p.stderr)
                self.assertIn(text, p.stderr)
        # a folder meshfs did not make is not turned into a cache
        mine = os.path.join(self.tmp, "mine")
        os.mkdir(mine)
        with open(os.path.join(mine, "notes.txt"), "w") as f:
            f.write("keep")
        p = run([tool("meshfs-cache"), "--cache-dir", mine, "warm", self.src])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(f"meshfs-cache: warm: cache: {mine} holds files meshfs did not make "
                      "('notes.txt')", p.stderr)
        self.assertEqual(os.listdir(mine), ["notes.txt"])


class CopyOther(Base):
    def make_tree(self):
        s = self.src
        with open(os.path.join(s, ".hidden.cfg"), "w") as f:
            f.write("x=1\n")
        os.mkdir(os.path.join(s, ".dot"))
        shutil.copy(os.path.join(s, "props", "tetra.stl"), os.path.join(s, ".dot", "Tetra.stl"))
        with open(os.path.join(s, "props", "boom.wav"), "wb") as f:
            f.write(b"RIFF\0\0\0\0WAVE")
        os.mkdir(os.path.join(s, "Empty"))
        os.symlink("crate", os.path.join(s, "CrateLink"))
        os.symlink("../props/cone.ply", os.path.join(s, "crate", "cone.ply"))
        os.symlink("/etc/hostname", os.path.join(s, "abs"))
        shutil.copy(os.path.join(s, "props", "tetra.stl"), os.path.join(s, "new\nline.stl"))

    def compare(self, convert_opts, mount_opts):
        self.make_tree()
        p = self.convert("--copy-other", *convert_opts)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (7, 0, 0))
        mnt, copy = os.path.join(self.tmp, "mnt"), os.path.join(self.tmp, "copy")
        with Mount(self.src, mnt, os.path.join(self.tmp, "mcache"), "hide_sources", *mount_opts):
            subprocess.run(["cp", "-r", mnt, copy], check=True, timeout=300)
        got, want = tree(os.path.join(self.tmp, "out")), tree(copy)
        self.assertEqual(sorted(got), sorted(want))
        for k in want:
            self.assertEqual(got[k], want[k], k)
        return got

    def test_tree_equals_cp_r_of_the_mount(self):
        got = self.compare([], [])
        self.assertEqual(got["CrateLink"], ("link", "crate"))
        self.assertEqual(got["abs"], ("link", "/etc/hostname"))
        self.assertEqual(got["crate/cone.ply"], ("link", "../props/cone.ply"))
        self.assertEqual(got["props/boom.wav"], ("file", b"RIFF\0\0\0\0WAVE"))
        self.assertEqual(got[".hidden.cfg"], ("file", b"x=1\n"))
        self.assertEqual(got["Empty"], ("dir",))
        self.assertIn(".dot/Tetra.fmd", got)
        self.assertIn("new\nline.fmd", got)
        self.assertNotIn("crate/crate.obj", got)  # models are not copied (hide_sources)
        self.assertIn("crate/crate.mtl", got)

    def test_tree_equals_cp_r_of_the_mount_lowercase(self):
        got = self.compare(["--lowercase-names"], ["lowercase_names"])
        self.assertEqual(got["cratelink"], ("link", "crate"))
        self.assertIn(".dot/tetra.fmd", got)
        self.assertIn("empty", got)

    def test_second_run_writes_nothing(self):
        self.make_tree()
        self.convert("--copy-other")
        out = os.path.join(self.tmp, "out")
        stamps = mtimes(out)
        p = self.convert("--copy-other")
        self.assertEqual(summary(p), (0, 7, 0))
        now = mtimes(out)
        self.assertEqual({k: v for k, v in now.items() if not k.endswith(".lgepkg")},
                         {k: v for k, v in stamps.items() if not k.endswith(".lgepkg")})


class Messages(Base):
    def test_newline_in_a_name_is_quoted(self):
        shutil.copy(os.path.join(self.src, "props", "tetra.stl"), os.path.join(self.src, "new\nline.stl"))
        with open(os.path.join(self.src, "bad\n.obj"), "w") as f:
            f.write(BAD_OBJ)
        rpath = os.path.join(self.tmp, "r.json")
        p = self.convert("--report", rpath)
        self.assertEqual(p.returncode, 1)
        lines = p.stdout.splitlines()
        shown = self.src + "/new\\nline.stl"
        self.assertIn(f'ok "{shown}"', lines)
        self.assertFalse([l for l in lines if l == "line.stl" or l.startswith("line.stl")])
        self.assertIn(f'  "{self.src}/bad\\n.obj": ', p.stderr)
        with open(rpath) as f:
            rows = [json.loads(l) for l in f]  # one row a line: the newline is escaped
        models = {r["model"] for r in rows if "model" in r}
        self.assertIn("new\nline.stl", models)
        self.assertIn("bad\n.obj", models)

    def test_paths_relative_to_the_input_given(self):
        os.symlink(self.src, os.path.join(self.tmp, "in"))
        p = subprocess.run([tool("meshfs-convert"), "--cache-dir", self.cache, "-o", "o", "in",
                            "in/props/cone.ply"], capture_output=True, text=True, cwd=self.tmp,
                           timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("ok in/crate/crate.obj", lines)
        # once under the folder, once named alone (its folder is its root)
        self.assertEqual(lines.count("ok in/props/cone.ply"), 2)
        self.assertIn("ok o/props/game_resources.lgepkg (2 of 2 models)", lines)
        self.assertNotIn(self.tmp, p.stdout + p.stderr)

    def test_bad_options_exit_2(self):
        for args, text in ((["--cache-dir", ""], "--cache-dir: empty path"),
                           (["--no-cache", "--cache-dir", "x"], "choose one"),
                           (["--copy-other=1"], "--copy-other"),
                           (["--bogus"], "bogus")):
            with self.subTest(args=args):
                p = self.convert(*args, cache=False)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(text, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))


class FlatFolder(Base):
    """One folder of many models.  Files named one by one (a shell glob) plan
    as their folder does: same names, same warnings.  And the folder is read
    a fixed number of times, not once a model: 400 files named in one folder
    cost 160,000 stats before any conversion, and the package's check for a
    real game_resources.lgepkg listed the folder once a model (4,000 models
    up to date: 7.2 s, all but 0.5 of it those listings)."""

    def setUp(self):
        super().setUp()
        self.flat = os.path.join(self.tmp, "flat")
        os.mkdir(self.flat)
        tetra = os.path.join(self.src, "props", "tetra.stl")
        self.names = [f"m{i:02}.stl" for i in range(40)]
        # clashes: A.stl and a.stl under --lowercase-names, a.stl and a.ply
        # want one base, b.vrt is a real file that b.stl's short name would hide
        self.names += ["A.stl", "a.stl", "a.ply", "b.stl"]
        for n in self.names:
            shutil.copy(tetra if n != "a.ply" else os.path.join(self.src, "props", "cone.ply"),
                        os.path.join(self.flat, n))
        with open(os.path.join(self.flat, "b.vrt"), "w") as f:
            f.write("a real file\n")

    def run_named(self, out, *inputs):
        return subprocess.run([tool("meshfs-convert"), "--no-cache", "--lowercase-names",
                               "-f", "vrt,gmf", "-o", os.path.join(self.tmp, out)] + list(inputs),
                              capture_output=True, text=True, timeout=600)

    def test_named_files_get_the_folders_names_and_warnings(self):
        whole = self.run_named("o_dir", self.flat)
        named = self.run_named("o_named", *[os.path.join(self.flat, n) for n in self.names])
        # a.stl loses to A.stl (both shown as a.stl): refused in both runs
        self.assertEqual(whole.returncode, 1, whole.stderr)
        self.assertEqual(named.returncode, 1, named.stderr)
        self.assertEqual(summary(whole), (43, 0, 1))
        self.assertEqual(summary(named), (43, 0, 1))
        self.assertEqual(tree(os.path.join(self.tmp, "o_named")), tree(os.path.join(self.tmp, "o_dir")))
        warnings = lambda p: sorted(l for l in p.stderr.splitlines() if ": warning: " in l)
        self.assertEqual(warnings(named), warnings(whole))
        out = os.listdir(os.path.join(self.tmp, "o_named"))
        for name in ("a.stl.vrt", "a.ply.vrt", "b.stl.vrt", "m00.vrt", "m39.gmf"):
            self.assertIn(name, out)
        self.assertNotIn("b.vrt", out)
        self.assertEqual(len(warnings(named)), 4, named.stderr)

    def test_a_named_file_that_is_no_model_by_its_name_is_converted_as_one(self):
        shutil.copy(os.path.join(self.flat, "m00.stl"), os.path.join(self.flat, "mesh.data"))
        p = self.run_named("o", os.path.join(self.flat, "m01.stl"),
                           os.path.join(self.flat, "mesh.data"), os.path.join(self.flat, "m02.stl"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (3, 0, 0))
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, "o"))),
                         ["m01.gmf", "m01.vrt", "m02.gmf", "m02.vrt", "mesh.gmf", "mesh.vrt"])

    def listings(self, formats, *inputs):
        """meshfs-convert's listings of the flat folder, counted by strace."""
        log = os.path.join(self.tmp, "strace.log")
        # LeakSanitizer cannot run under ptrace (the ASan suite); the same
        # paths are leak-checked by this class's runs without strace
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = dict(os.environ, ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0")
        p = subprocess.run(
            ["strace", "-f", "-qq", "-e", "trace=openat,open", "-o", log, tool("meshfs-convert"),
             "--no-cache", "-j1", "-f", formats, "-o", os.path.join(self.tmp, "o")] + list(inputs),
            capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (40, 0, 0))
        # opendir's flags: the listings (each conversion also opens the folder
        # as its root, O_PATH in the worker's sandbox; those are not reads)
        with open(log) as f:
            return [l for l in f if f'"{self.flat}"' in l and "O_NONBLOCK" in l and "O_DIRECTORY" in l]

    def test_the_folder_is_read_once(self):
        named = [os.path.join(self.flat, n) for n in self.names if n.startswith("m")]
        opens = self.listings("vrt", *named)
        self.assertEqual(len(opens), 1, "".join(opens[:5]))

    def test_the_package_checks_the_folder_once(self):
        for n in ("A.stl", "a.stl", "a.ply", "b.stl", "b.vrt"):
            os.remove(os.path.join(self.flat, n))
        # the planner's listing, and the package's look for a real one
        opens = self.listings("lgepkg", self.flat)
        self.assertEqual(len(opens), 2, "".join(opens[:5]))
        with open(os.path.join(self.tmp, "o", "game_resources.lgepkg"), "rb") as f:
            self.assertGreater(len(f.read()), 40 * 4 * 8)
        # a real package in the source folder still wins
        with open(os.path.join(self.flat, "game_resources.lgepkg"), "wb") as f:
            f.write(b"made elsewhere")
        shutil.rmtree(os.path.join(self.tmp, "o"))
        self.assertEqual(len(self.listings("lgepkg", self.flat)), 2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o", "game_resources.lgepkg")))


class Progress(Base):
    def under_pty(self, *args):
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(tool("meshfs-convert"), [tool("meshfs-convert"), "--cache-dir", self.cache,
                                              "-o", os.path.join(self.tmp, "out")] +
                     list(args) + [self.src])
        data = b""
        while True:
            r, _, _ = select.select([fd], [], [], 120)
            if not r:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status), data.decode(errors="replace")

    def test_progress_line_on_a_terminal(self):
        code, out = self.under_pty("-j1")
        self.assertEqual(code, 0, out)
        self.assertIn("\r\x1b[K", out)
        self.assertRegex(out, r"5/5  \d+\.\d models/s  ETA 0:00")
        self.assertRegex(out, r"[0-4]/5  \d+\.\d models/s  ETA \S+  \S*" + re.escape(self.src))
        self.assertIn("5 converted, 0 up to date, 0 failed", out)
        self.assertNotIn("ok " + self.src, out)  # the line replaces the per-model lines

    def test_no_progress_with_q_or_in_a_pipe(self):
        code, out = self.under_pty("-q")
        self.assertEqual(code, 0, out)
        self.assertNotIn("models/s", out)
        self.assertEqual(out, "")
        p = self.convert()
        self.assertNotIn("models/s", p.stdout + p.stderr)
        self.assertNotIn("\r", p.stdout + p.stderr)
        self.assertEqual(summary(p), (0, 5, 0))


if __name__ == "__main__":
    unittest.main()

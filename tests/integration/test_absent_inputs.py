"""Absent inputs are inputs (issue 28): every path an importer tried and
did not find, and every folder searched for a texture ignoring case, is an
input of the model's views.  A file that appears there (the .mtl, texture
or .bin copied in after the model), a better-matching name, or a file
removed again, makes the views again: in meshfs-convert with its cache and
in a live mount once the attribute timeout has passed, with both
importers.  Each run's bytes are compared with a conversion without the
cache: the cache never gives what a fresh conversion would not."""
import errno
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, TreeCase, run_tests, tool  # noqa: E402
from mount import Mount  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
FALLBACK = struct.pack("<iiiHH", 1, 1, 4, 3, 3) + b"\xff\xff\xff\xff"
IMPORTERS = ("auto", "assimp")


def png(w, h=1, grey=0x80):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + bytes([grey, grey, grey]) * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def tex_size(data):
    return struct.unpack("<ii", data[:8])


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def views(out, stem):
    """{file name: bytes} of the views of one model in an output folder."""
    d = os.path.join(out, os.path.dirname(stem))
    base = os.path.basename(stem) + "."
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))
            if n.startswith(base)}


class Convert(TreeCase):
    """meshfs-convert with its cache, each run checked against a run
    without it (--no-cache into another folder)."""

    def convert(self, importer, out="out", cache=True):
        rpath = os.path.join(self.tmp, "report.json")
        argv = [tool("meshfs-convert"), "-o", os.path.join(self.tmp, out), "--report", rpath,
                "--importer", importer, "--timeout", "60"]
        argv += ["--cache-dir", self.cache] if cache else ["--no-cache"]
        p = subprocess.run(argv + [self.src], capture_output=True, text=True, timeout=600)
        with open(rpath) as f:
            rows = {r["model"]: r for r in map(json.loads, f) if "model" in r}
        return p, rows

    def step(self, importer, model, state):
        """Converts with the cache; the row's state must be `state`, and the
        views must equal those of a conversion without the cache."""
        p, rows = self.convert(importer)
        self.assertEqual(rows[model]["state"], state, (p.stderr, rows[model]))
        stem = os.path.splitext(model)[0]
        if state != "failed":
            fresh = "fresh-%d" % time.monotonic_ns()
            q, _ = self.convert(importer, out=fresh, cache=False)
            self.assertEqual(q.returncode, 0, q.stderr)
            got = views(os.path.join(self.tmp, "out"), stem)
            self.assertEqual(got, views(os.path.join(self.tmp, fresh), stem))
            shutil.rmtree(os.path.join(self.tmp, fresh))
        return rows[model]

    def tex(self, stem):
        with open(os.path.join(self.tmp, "out", stem + ".tex"), "rb") as f:
            return f.read()

    def fresh_textured(self, texture):
        """A new tree and cache: m/m.obj, one triangle whose .mtl names
        texture as its diffuse map.  Returns the model's folder."""
        shutil.rmtree(self.tmp + "/src", ignore_errors=True)
        shutil.rmtree(self.tmp + "/out", ignore_errors=True)
        shutil.rmtree(self.cache, ignore_errors=True)
        m = os.path.join(self.src, "m")
        write(os.path.join(m, "m.obj"), "mtllib m.mtl\nusemtl a\nv 0 0 0\nv 1 0 0\n"
              "v 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n")
        write(os.path.join(m, "m.mtl"), "newmtl a\nKd 1 1 1\nmap_Kd %s\n" % texture)
        return m

    def test_obj_before_its_mtl_and_texture(self):
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                shutil.rmtree(self.tmp + "/src", ignore_errors=True)
                shutil.rmtree(self.tmp + "/out", ignore_errors=True)
                shutil.rmtree(self.cache, ignore_errors=True)
                crate = os.path.join(EXAMPLES, "crate")
                write(os.path.join(self.src, "crate", "crate.obj"),
                      open(os.path.join(crate, "crate.obj"), "rb").read())
                self.step(importer, "crate/crate.obj", "converted")
                self.assertEqual(self.tex("crate/crate"), FALLBACK)
                first = views(os.path.join(self.tmp, "out"), "crate/crate")
                self.step(importer, "crate/crate.obj", "up to date")
                # the artist copies the material and its textures in
                shutil.copy(os.path.join(crate, "crate.mtl"), os.path.join(self.src, "crate"))
                shutil.copytree(os.path.join(crate, "textures"),
                                os.path.join(self.src, "crate", "textures"))
                row = self.step(importer, "crate/crate.obj", "converted")
                self.assertEqual(tex_size(self.tex("crate/crate")), (8, 8))
                self.assertIn("crate/crate.mtl", row["deps"])
                self.assertIn("crate/textures/crate.png", row["deps"])
                self.step(importer, "crate/crate.obj", "up to date")
                # the .mtl removed again: the first run's bytes (the model
                # entry lists the latest inputs only, so a worker runs)
                os.unlink(os.path.join(self.src, "crate", "crate.mtl"))
                self.step(importer, "crate/crate.obj", "converted")
                self.assertEqual(views(os.path.join(self.tmp, "out"), "crate/crate"), first)

    def test_gltf_before_its_bin(self):
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                shutil.rmtree(self.tmp + "/src", ignore_errors=True)
                shutil.rmtree(self.cache, ignore_errors=True)
                chars = os.path.join(EXAMPLES, "characters")
                write(os.path.join(self.src, "strip.gltf"),
                      open(os.path.join(chars, "strip.gltf"), "rb").read())
                row = self.step(importer, "strip.gltf", "failed")
                self.assertFalse(row["ok"])
                row = self.step(importer, "strip.gltf", "failed")
                self.assertTrue(row["remembered"], row)  # still failing: remembered
                shutil.copy(os.path.join(chars, "strip.bin"), self.src)
                row = self.step(importer, "strip.gltf", "converted")
                self.assertTrue(row["ok"], row)
                self.assertIn("strip.bin", row["deps"])

    def test_texture_found_ignoring_case_then_a_better_match(self):
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                m = self.fresh_textured("Wood.png")
                write(os.path.join(m, "wood.png"), png(2))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (2, 1))
                # another folder's new file, or a name that does not match: no work
                write(os.path.join(self.src, "other.txt"), "x")
                write(os.path.join(m, "stone.png"), png(5))
                self.step(importer, "m/m.obj", "up to date")
                # a name the search prefers (byte order: upper case first)
                write(os.path.join(m, "WOOD.PNG"), png(3))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (3, 1))
                # the name as written, which beats any search
                write(os.path.join(m, "Wood.png"), png(4))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (4, 1))
                # removed again: back to the search's best
                os.unlink(os.path.join(m, "Wood.png"))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (3, 1))
                os.unlink(os.path.join(m, "WOOD.PNG"))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (2, 1))

    def test_textures_found_as_engines_find_them(self):
        """Issue 34 item 6: a .tga name where only another image of its
        stem ships (id Tech's rule), a name without an extension, and an
        absolute path from the artist's machine, each found ignoring case
        in the model's folder and then in a textures/ beside it.  Every
        search is an input: an image that matches better when it appears
        makes the views again.  The files hold PNG bytes whatever their
        extension (the decoder goes by content), each of its own width, so
        the .tex says which file was taken."""
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                m = self.fresh_textured("wood.tga")
                write(os.path.join(m, "Wood.JPG"), png(2))
                write(os.path.join(m, "wood.txt"), "not an image")
                row = self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (2, 1))
                self.assertIn("m/Wood.JPG", row["deps"])
                self.assertEqual(row["warnings"], [])
                self.step(importer, "m/m.obj", "up to date")
                # a .png of the stem is preferred to a .jpg (the order
                # tga png jpg jpeg bmp dds): the search's value moved
                write(os.path.join(m, "wood.png"), png(3))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (3, 1))
                # the name as written beats every search
                write(os.path.join(m, "wood.tga"), png(4))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (4, 1))
                for n in ("wood.tga", "wood.png", "Wood.JPG"):
                    os.unlink(os.path.join(m, n))

                # a shader-style name without an extension
                write(os.path.join(m, "m.mtl"), "newmtl a\nKd 1 1 1\nmap_Kd skin\n")
                write(os.path.join(m, "SKIN.bmp"), png(5))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (5, 1))
                os.unlink(os.path.join(m, "SKIN.bmp"))

                # an absolute path of the artist's machine: its base name,
                # in a textures/ beside the model, then in the model's folder
                write(os.path.join(m, "m.mtl"),
                      "newmtl a\nKd 1 1 1\nmap_Kd C:\\art\\tex\\Crate.tga\n")
                row = self.step(importer, "m/m.obj", "converted")
                self.assertEqual(self.tex("m/m"), FALLBACK)
                self.assertEqual(row["warnings"], ["referenced file 'm/Crate.tga' is missing"])
                write(os.path.join(m, "textures", "CRATE.png"), png(6))
                row = self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (6, 1))
                self.assertIn("m/textures/CRATE.png", row["deps"])
                write(os.path.join(m, "crate.jpg"), png(7))
                self.step(importer, "m/m.obj", "converted")
                self.assertEqual(tex_size(self.tex("m/m")), (7, 1))
                self.step(importer, "m/m.obj", "up to date")

    def test_warm_converts_again_when_a_file_appears(self):
        crate = os.path.join(EXAMPLES, "crate")
        write(os.path.join(self.src, "crate.obj"),
              open(os.path.join(crate, "crate.obj"), "rb").read())
        warm = [tool("meshfs-cache"), "--cache-dir", self.cache, "warm", self.src]
        for expect in ("1 converted, 0 up to date", "0 converted, 1 up to date"):
            p = subprocess.run(warm, capture_output=True, text=True, timeout=600)
            self.assertEqual(p.stdout, f"warm: {expect}, 0 failed\n", p.stderr)
        shutil.copy(os.path.join(crate, "crate.mtl"), self.src)
        shutil.copytree(os.path.join(crate, "textures"), os.path.join(self.src, "textures"))
        for expect in ("1 converted, 0 up to date", "0 converted, 1 up to date"):
            p = subprocess.run(warm, capture_output=True, text=True, timeout=600)
            self.assertEqual(p.stdout, f"warm: {expect}, 0 failed\n", p.stderr)
        # and a run of meshfs-convert over that cache converts nothing more
        row = self.step("auto", "crate.obj", "up to date")
        self.assertEqual(tex_size(self.tex("crate")), (8, 8))
        self.assertIn("textures/crate.png", row["deps"])


def missing_tree(src):
    """An .obj without its .mtl, a .gltf without its .bin, and a model whose
    .mtl names a texture that is not there (and the name a search finds)."""
    write(os.path.join(src, "crate", "crate.obj"),
          open(os.path.join(EXAMPLES, "crate", "crate.obj"), "rb").read())
    write(os.path.join(src, "strip.gltf"),
          open(os.path.join(EXAMPLES, "characters", "strip.gltf"), "rb").read())
    write(os.path.join(src, "m", "m.obj"), "mtllib m.mtl\nusemtl a\nv 0 0 0\nv 1 0 0\n"
          "v 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n")
    write(os.path.join(src, "m", "m.mtl"), "newmtl a\nKd 1 1 1\nmap_Kd textures/Wood.png\n")


MISSING = {"crate/crate.obj": "referenced file 'crate/crate.mtl' is missing",
           "strip.gltf": "referenced file 'strip.bin' is missing",
           "m/m.obj": "referenced file 'm/textures/Wood.png' is missing"}


class Said(TreeCase):
    """A missing referenced file is said (issue 28, item 2): in
    meshfs-convert's output and --report, and in a mount's log and the
    views' user.meshfs.warnings."""

    def run_convert(self, importer):
        rpath = os.path.join(self.tmp, "report.json")
        p = subprocess.run([tool("meshfs-convert"), "-o", os.path.join(self.tmp, "out"),
                            "--cache-dir", self.cache, "--importer", importer, "--report", rpath,
                            "--timeout", "60", self.src],
                           capture_output=True, text=True, timeout=600)
        with open(rpath) as f:
            rows = {r["model"]: r for r in map(json.loads, f) if "model" in r}
        lines = sorted(ln for ln in p.stderr.splitlines() if ": warning: " in ln)
        return rows, lines

    def test_convert_says_each_missing_file_once(self):
        missing_tree(self.src)
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                shutil.rmtree(self.cache, ignore_errors=True)
                want = sorted(f"meshfs-convert: warning: {self.src}/{m}: {t}"
                              for m, t in MISSING.items())
                for run in ("converted", "from the cache"):
                    rows, lines = self.run_convert(importer)
                    self.assertEqual(lines, want, run)
                    for m, t in MISSING.items():
                        self.assertEqual(rows[m]["warnings"], [t], (run, m))
                    self.assertEqual(rows["crate/crate.obj"]["state"],
                                     "converted" if run == "converted" else "up to date")
        # every file there: nothing to say
        shutil.copy(os.path.join(EXAMPLES, "crate", "crate.mtl"), os.path.join(self.src, "crate"))
        shutil.copytree(os.path.join(EXAMPLES, "crate", "textures"),
                        os.path.join(self.src, "crate", "textures"))
        shutil.copy(os.path.join(EXAMPLES, "characters", "strip.bin"), self.src)
        shutil.copytree(os.path.join(EXAMPLES, "characters", "textures"),
                        os.path.join(self.src, "textures"))
        write(os.path.join(self.src, "m", "textures", "Wood.png"), png(2))
        rows, lines = self.run_convert("auto")
        self.assertEqual(lines, [])
        self.assertEqual({m: r["warnings"] for m, r in rows.items()},
                         {m: [] for m in MISSING})

    def test_a_mount_says_them_in_its_log_and_an_xattr(self):
        missing_tree(self.src)
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1") as mnt:
            def warnings(view):
                return os.getxattr(os.path.join(self.mnt, view), "user.meshfs.warnings").decode()
            for _ in range(3):  # several reads: one line in the log
                for view in ("crate/crate.gmf", "crate/crate.tex", "m/m.tex", "strip.fmd"):
                    model = {"crate": "crate/crate.obj", "m": "m/m.obj",
                             "strip.fmd": "strip.gltf"}[view.split("/")[0]]
                    self.assertEqual(warnings(view), MISSING[model], view)
            # not on a model's own file, nor on a folder's package
            for name in ("crate/crate.obj", "crate/game_resources.lgepkg", "."):
                with self.assertRaises(OSError) as e:
                    os.getxattr(os.path.join(self.mnt, name), "user.meshfs.warnings")
                self.assertEqual(e.exception.errno, errno.ENODATA, name)
            log = mnt.output()
            for m, t in MISSING.items():
                self.assertEqual(log.count(f"{m}: {t}"), 1, log)
            shutil.copy(os.path.join(EXAMPLES, "crate", "crate.mtl"),
                        os.path.join(self.src, "crate"))
            time.sleep(1.3)
            # the .mtl is there: now its texture is what is missing
            self.assertEqual(warnings("crate/crate.gmf"),
                             "referenced file 'crate/textures/crate.png' is missing")
            shutil.copytree(os.path.join(EXAMPLES, "crate", "textures"),
                            os.path.join(self.src, "crate", "textures"))
            time.sleep(1.3)
            with self.assertRaises(OSError) as e:
                warnings("crate/crate.gmf")
            self.assertEqual(e.exception.errno, errno.ENODATA)
            self.assertEqual(warnings("strip.gmf"), MISSING["strip.gltf"])


class Unreadable(TreeCase):
    """A file the model references that is there but that the model's owner
    may not read: converted without it, said like a missing one, and an
    input, so a chmod that lets the owner read it makes the views again.
    The tree is root's, so the conversion runs as the worker user, which a
    mode 600 .mtl keeps out."""

    UNREADABLE = ("referenced file 'crate/crate.mtl' cannot be read by the model's owner: "
                  "converted without it")

    def convert(self):
        rpath = os.path.join(self.tmp, "report.json")
        p = subprocess.run([tool("meshfs-convert"), "-o", os.path.join(self.tmp, "out"),
                            "--cache-dir", self.cache, "--report", rpath, "--timeout", "60", self.src],
                           capture_output=True, text=True, timeout=600)
        with open(rpath) as f:
            rows = {r["model"]: r for r in map(json.loads, f) if "model" in r}
        return p, rows["crate/crate.obj"]

    @unittest.skipUnless(os.geteuid() == 0, "the worker runs as the worker user only under root")
    def test_an_unreadable_mtl_is_said_and_is_an_input(self):
        shutil.copytree(os.path.join(EXAMPLES, "crate"), os.path.join(self.src, "crate"))
        os.chmod(self.tmp, 0o755)
        mtl = os.path.join(self.src, "crate", "crate.mtl")
        os.chmod(mtl, 0o600)
        for state in ("converted", "up to date"):
            p, row = self.convert()
            self.assertEqual((row["state"], row["warnings"]), (state, [self.UNREADABLE]), p.stderr)
            self.assertIn(f"meshfs-convert: warning: {self.src}/crate/crate.obj: {self.UNREADABLE}", p.stderr)
            self.assertEqual(open(os.path.join(self.tmp, "out", "crate", "crate.tex"), "rb").read(), FALLBACK)
        os.chmod(mtl, 0o644)  # readable now: a new conversion, with its material
        p, row = self.convert()
        self.assertEqual((row["state"], row["warnings"]), ("converted", []), p.stderr)
        self.assertEqual(tex_size(open(os.path.join(self.tmp, "out", "crate", "crate.tex"), "rb").read()), (8, 8))
        # and through a mount (its own cache: this one holds the views made
        # while the owner could read it, which stay right by their bytes),
        # in the views' warnings
        os.chmod(mtl, 0o600)
        with Mount(self.src, self.mnt, self.cache + "2") as mnt:
            gmf = os.path.join(self.mnt, "crate", "crate.gmf")
            self.assertEqual(os.getxattr(gmf, "user.meshfs.warnings").decode(), self.UNREADABLE)
            self.assertEqual(mnt.output().count(self.UNREADABLE), 1)


def stamps(root):
    """{relative path: (inode, mtime ns, mode)} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for n in files:
            st = os.lstat(os.path.join(d, n))
            out[os.path.relpath(os.path.join(d, n), root)] = (st.st_ino, st.st_mtime_ns,
                                                              st.st_mode)
    return out


class SecondRun(TreeCase):
    """A second run over unchanged inputs rewrites nothing (issue 28, item
    3): every output keeps its inode and mtime, game_resources.lgepkg
    included, so rsync -ai itemizes nothing; a package whose bytes change
    is rewritten."""

    def convert(self):
        p = subprocess.run([tool("meshfs-convert"), "-o", os.path.join(self.tmp, "out"),
                            "--cache-dir", self.cache, self.src],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)

    def rsync(self):
        p = subprocess.run(["rsync", "-ai", os.path.join(self.tmp, "out") + "/",
                            os.path.join(self.tmp, "copy") + "/"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_a_second_run_rewrites_nothing(self):
        shutil.copytree(EXAMPLES, self.src)
        self.convert()
        out = os.path.join(self.tmp, "out")
        before = stamps(out)
        self.assertEqual(sum(k.endswith("game_resources.lgepkg") for k in before), 4)
        self.assertNotEqual(self.rsync(), "")
        time.sleep(0.05)  # a rewrite would show in the mtime
        self.convert()
        self.assertEqual(stamps(out), before)
        self.assertEqual(self.rsync(), "")
        # a model changed: its views and its folder's package, nothing else
        with open(os.path.join(self.src, "crate", "crate.obj"), "a") as f:
            f.write("v 2 2 2\nf 1 2 9\n")
        self.convert()
        now = stamps(out)
        moved = sorted(k for k in now if now[k] != before.get(k))
        self.assertIn("crate/game_resources.lgepkg", moved)
        self.assertIn("crate/crate.gmf", moved)
        self.assertTrue(all(k.startswith("crate/") for k in moved), moved)
        self.assertNotIn("crate/crate.tex", moved)  # same bytes: kept


class Mounted(TreeCase):
    """A live mount: no remount, no touch; only the attribute timeout."""

    def read(self, path):
        with open(os.path.join(self.mnt, path), "rb") as f:
            return f.read()

    def wait_timeout(self):
        time.sleep(1.3)  # attr_timeout=1 and entry_timeout=1

    def test_files_appearing_and_going_under_a_mount(self):
        for importer in IMPORTERS:
            with self.subTest(importer=importer):
                shutil.rmtree(self.src, ignore_errors=True)
                shutil.rmtree(self.cache, ignore_errors=True)
                crate = os.path.join(EXAMPLES, "crate")
                chars = os.path.join(EXAMPLES, "characters")
                write(os.path.join(self.src, "crate", "crate.obj"),
                      open(os.path.join(crate, "crate.obj"), "rb").read())
                write(os.path.join(self.src, "strip.gltf"),
                      open(os.path.join(chars, "strip.gltf"), "rb").read())
                with Mount(self.src, self.mnt, self.cache, "importer=" + importer,
                           "attr_timeout=1", "entry_timeout=1") as mnt:
                    self.assertEqual(self.read("crate/crate.tex"), FALLBACK)
                    with self.assertRaises(OSError) as e:
                        self.read("strip.gmf")
                    self.assertEqual(e.exception.errno, errno.EIO)
                    before = mnt.stats()["conversions"]
                    self.wait_timeout()
                    # nothing changed: nothing converted
                    self.assertEqual(self.read("crate/crate.tex"), FALLBACK)
                    self.assertEqual(mnt.stats()["conversions"], before)

                    shutil.copy(os.path.join(crate, "crate.mtl"),
                                os.path.join(self.src, "crate"))
                    shutil.copytree(os.path.join(crate, "textures"),
                                    os.path.join(self.src, "crate", "textures"))
                    shutil.copy(os.path.join(chars, "strip.bin"), self.src)
                    self.wait_timeout()
                    tex = self.read("crate/crate.tex")
                    self.assertEqual(tex_size(tex), (8, 8))
                    gmf = self.read("strip.gmf")
                    self.assertGreater(len(gmf), 100)
                    self.assertEqual(mnt.stats()["conversions"], before + 2)

                    os.unlink(os.path.join(self.src, "crate", "crate.mtl"))
                    self.wait_timeout()
                    self.assertEqual(self.read("crate/crate.tex"), FALLBACK)
                    # the bytes a conversion without the cache gives
                    fresh = os.path.join(self.tmp, "fresh")
                    p = subprocess.run([tool("meshfs-convert"), "-o", fresh, "--no-cache",
                                        "--importer", importer, self.src],
                                       capture_output=True, text=True, timeout=600)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    for name in ("crate/crate.tex", "crate/crate.gmf", "strip.gmf", "strip.fmd"):
                        with open(os.path.join(fresh, name), "rb") as f:
                            self.assertEqual(self.read(name), f.read(), name)
                    shutil.rmtree(fresh)


    def test_a_texture_folder_appearing_under_a_mount(self):
        """The stem search in a textures/ that does not exist yet is an
        input: the folder and an image of the stem copied in make the
        .tex again, with no remount."""
        m = os.path.join(self.src, "m")
        write(os.path.join(m, "m.obj"), "mtllib m.mtl\nusemtl a\nv 0 0 0\nv 1 0 0\n"
              "v 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n")
        write(os.path.join(m, "m.mtl"), "newmtl a\nKd 1 1 1\nmap_Kd D:/proj/art/Wood.tga\n")
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1") as mnt:
            self.assertEqual(self.read("m/m.tex"), FALLBACK)
            before = mnt.stats()["conversions"]
            write(os.path.join(m, "textures", "WOOD.jpeg"), png(9))
            self.wait_timeout()
            self.assertEqual(tex_size(self.read("m/m.tex")), (9, 1))
            self.assertEqual(mnt.stats()["conversions"], before + 1)


if __name__ == "__main__":
    run_tests()

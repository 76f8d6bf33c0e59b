"""Settings files beside the assets (issue 30, docs/settings.md): each key
checked on the views' bytes and values, precedence, a sidecar edited under
a live mount, malformed and hostile files, and a file of another user."""
import errno
import json
import os
import pwd
import shutil
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, TreeCase, run_tests, tool  # noqa: E402
from mount import Mount  # noqa: E402

CRATE = os.path.join(SOURCE, "examples", "assets", "crate")


def convert(src, out, *opts, cache=None):
    argv = [tool("meshfs-convert"), "-o", out, "--timeout", "60"] + list(opts)
    argv += ["--cache-dir", cache] if cache else ["--no-cache"]
    return subprocess.run(argv + [src], capture_output=True, text=True, timeout=600)


def bounds(path):
    """The canonical box meshfs-inspect reads from a view: ((x,y,z), (x,y,z))."""
    p = subprocess.run([tool("meshfs-inspect"), path], capture_output=True, text=True, check=True)
    line = next(l for l in p.stdout.splitlines() if "canonical" in l)
    box = line.split("canonical", 1)[1]
    lo, hi = box.split("..")
    num = lambda s: tuple(round(float(v), 6) for v in s.strip().strip("()").split())
    return num(lo), num(hi)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Keys(TreeCase):
    """meshfs-convert without a cache: what each key does to the bytes."""

    def setUp(self):
        super().setUp()
        shutil.copytree(CRATE, os.path.join(self.src, "crate"))
        self.n = 0

    def run_with(self, settings, *opts, where="crate/crate.obj.meshfs"):
        """Converts with `settings` written to `where` (None: no file);
        returns the output folder."""
        path = os.path.join(self.src, where)
        if settings is None:
            if os.path.exists(path):
                os.unlink(path)
        else:
            with open(path, "w") as f:
                f.write(settings)
        self.n += 1
        out = os.path.join(self.tmp, "out%d" % self.n)
        p = convert(self.src, out, *opts)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return out

    def test_scale_unit_and_axes_move_the_model(self):
        plain = bounds(os.path.join(self.run_with(None), "crate", "crate.gmf"))
        self.assertEqual(plain, ((-0.5, 0.0, -0.5), (0.5, 1.0, 0.5)))
        for text, box in [
            ("scale = 2\n", ((-1, 0, -1), (1, 2, 1))),
            ("unit = cm\n", ((-0.005, 0, -0.005), (0.005, 0.01, 0.005))),
            ("unit = in\nscale = 2\n", ((-0.0254, 0, -0.0254), (0.0254, 0.0508, 0.0254))),
            # the crate's +y taken for its front: turned to +z, its +z up
            ("forward = y\n", ((-0.5, -0.5, 0), (0.5, 0.5, 1))),
            # up = z: +z becomes +y, and the front (-y, Z-up tools') +z
            ("up = z\n", ((-0.5, -0.5, -1), (0.5, 0.5, 0))),
            ("up = -x\nforward = z\n", ((0, -0.5, -0.5), (1, 0.5, 0.5))),
        ]:
            with self.subTest(settings=text):
                got = bounds(os.path.join(self.run_with(text), "crate", "crate.gmf"))
                want = tuple(tuple(round(float(v), 6) + 0.0 for v in c) for c in box)
                self.assertEqual(got, want)

    def test_per_format_keys_equal_the_options(self):
        """A key named after a mount option gives the bytes that option gives."""
        base = self.run_with(None)
        for key, flag, view in [("fmd_raw = true", ["--fmd-raw"], "crate.fmd"),
                                ("vrt_layout = plain", ["--vrt-layout", "plain"], "crate.vrt"),
                                ("reverse_winding = yes", ["--reverse-winding"], "crate.tri"),
                                ("fmi_textures = on", ["--fmi-textures"], "crate.fmi")]:
            with self.subTest(key=key):
                with_key = self.run_with(key + "\n")
                with_flag = self.run_with(None, *flag)
                got, want = read(os.path.join(with_key, "crate", view)), read(os.path.join(with_flag, "crate", view))
                self.assertEqual(got, want)
                self.assertNotEqual(got, read(os.path.join(base, "crate", view)))
        # and a key set to false over a command line's true
        got = read(os.path.join(self.run_with("fmd_raw = false\n", "--fmd-raw"), "crate", "crate.fmd"))
        self.assertEqual(got, read(os.path.join(base, "crate", "crate.fmd")))

    def test_normals_are_kept_or_computed_with_an_angle(self):
        """The crate is a cube with flat normals: kept, or computed splitting
        at 10 degrees, every normal lies on an axis; computed smoothing up to
        100 degrees, every corner's normal points out of the corner
        (docs/formats/vrt.md: 12-byte header, 64-byte vertices, normal at 20)."""
        def normals(out):
            data = read(os.path.join(out, "crate", "crate.vrt"))
            return [struct.unpack_from("<3f", data, 12 + 64 * i + 20) for i in range((len(data) - 12) // 64)]
        keep = normals(self.run_with("normals = keep\n"))
        self.assertGreater(len(keep), 0)
        for n in keep:
            self.assertEqual(sorted(abs(round(c, 5)) for c in n), [0, 0, 1])
        self.assertEqual(normals(self.run_with("normals = compute 10\n")), keep)
        smooth = normals(self.run_with("normals = compute 100\n"))
        self.assertGreater(len(smooth), 0)
        for n in smooth:
            self.assertEqual([round(abs(c), 4) for c in n], [0.5774] * 3)

    def test_texture_names_the_image_of_every_material(self):
        os.makedirs(os.path.join(self.src, "crate", "skins"))
        # a 2x3 RGB image stb_image reads: a binary PPM
        with open(os.path.join(self.src, "crate", "skins", "red.ppm"), "wb") as f:
            f.write(b"P6\n2 3\n255\n" + b"\xff\x00\x00" * 6)
        out = self.run_with("texture = skins/red.ppm\nfmi_textures = true\n")
        tex = read(os.path.join(out, "crate", "crate.tex"))
        self.assertEqual(tex[:8], (2).to_bytes(4, "little") + (3).to_bytes(4, "little"))
        # .fmi names a mesh's texture by its stem (docs/formats/fmi.md)
        self.assertIn(b"\ncrate=red\n", read(os.path.join(out, "crate", "crate.fmi")))

    def test_precedence_nearest_wins_and_clips_are_one_unit(self):
        os.makedirs(os.path.join(self.src, "crate", "deeper"))
        shutil.copy(os.path.join(CRATE, "crate.obj"), os.path.join(self.src, "crate", "deeper", "box.obj"))
        with open(os.path.join(self.src, ".meshfs"), "w") as f:
            f.write("scale = 10\nup = z\n")
        with open(os.path.join(self.src, "crate", ".meshfs"), "w") as f:
            f.write("scale = 2  ; nearer than the root's\n")
        out = self.run_with("up = y\n", where="crate/deeper/box.obj.meshfs")
        # box: scale 2 (crate/.meshfs over the root's 10), up y (its sidecar over the root's z)
        self.assertEqual(bounds(os.path.join(out, "crate", "deeper", "box.gmf")), ((-1, 0, -1), (1, 2, 1)))
        # crate: scale 2, up z from the root
        self.assertEqual(bounds(os.path.join(out, "crate", "crate.gmf")), ((-1, -1, -2), (1, 1, 0)))


SKELETON = "/usr/share/assimp/models/FBX/animation_with_skeleton.fbx"  # 21 frames at 24 a second


def dem_sequences(path):
    """{name: (bounds lines, {frame: [joint lines]})} of a .dem's sequences,
    read by the seed's keywords (research/dem_vrt.md: sequence, rate,
    components, joints, bounds/b, events, frames/f FRAME JOINT ...)."""
    seqs, cur = {}, None
    for line in open(path).read().splitlines():
        w = line.split(" ", 1)
        if w[0] == "sequence":
            cur = seqs.setdefault(w[1], ([], {}))
        elif cur is not None and w[0] == "b":
            cur[0].append(w[1])
        elif cur is not None and w[0] == "f":
            frame, rest = w[1].split(" ", 1)
            cur[1].setdefault(int(frame), []).append(rest)
    return seqs


@unittest.skipUnless(os.path.exists(SKELETON), "assimp-testmodels is not installed")
class Clips(TreeCase):
    """One long take cut into three clips: each .dem sequence plays the
    take's frames of its span, and .gmf holds three animations."""

    def assertClose(self, got, want, where):
        """Lines of numbers equal to float32 rounding: a clip samples its
        keys shifted to start at 0, which may move the last bit."""
        self.assertEqual(len(got), len(want), where)
        for g, w in zip(got, want):
            gv, wv = [float(v) for v in g.split()], [float(v) for v in w.split()]
            self.assertEqual(len(gv), len(wv), where)
            for a, b in zip(gv, wv):
                self.assertLessEqual(abs(a - b), 1e-5 * max(1.0, abs(b)), (where, g, w))

    def test_a_take_split_into_three_clips(self):
        os.makedirs(self.src)
        shutil.copy(SKELETON, os.path.join(self.src, "hero.fbx"))
        whole = os.path.join(self.tmp, "whole")
        self.assertEqual(convert(self.src, whole, "-f", "dem,gmf").returncode, 0)
        (take, (tb, tf)), = dem_sequences(os.path.join(whole, "hero.dem")).items()
        self.assertEqual(len(tf), 21)
        with open(os.path.join(self.src, "hero.fbx.meshfs"), "w") as f:
            f.write("take = %s\n[clip idle]\nstart = 0\nend = 6\n[clip walk]\nstart = 6\nend = 14\n"
                    "loop = true\n[clip attack]\nstart = 0.5s   # frame 12 at 24 a second\nend = 20\n" % take)
        out = os.path.join(self.tmp, "clips")
        p = convert(self.src, out, "-f", "dem,gmf")
        self.assertEqual(p.returncode, 0, p.stderr)
        seqs = dem_sequences(os.path.join(out, "hero.dem"))
        self.assertEqual(list(seqs), ["idle", "walk", "attack"])
        for name, first, last in [("idle", 0, 6), ("walk", 6, 14), ("attack", 12, 20)]:
            bounds, frames = seqs[name]
            self.assertEqual(sorted(frames), list(range(last - first + 1)), name)
            for k in frames:  # the take's frame first + k, joint by joint
                self.assertClose(frames[k], tf[first + k], (name, k))
                self.assertClose([bounds[k]], [tb[first + k]], (name, k))
        q = subprocess.run([tool("meshfs-inspect"), os.path.join(out, "hero.gmf")], capture_output=True,
                           text=True, check=True)
        self.assertIn("animations 3", q.stdout)
        # a take the model does not have, a clip past the take's end
        for text, msg in [("take = Run\n[clip a]\nstart = 0\nend = 1\n",
                           "hero.fbx.meshfs:1: take 'Run' is not an animation of the model (it has '%s')" % take),
                          ("[clip a]\nstart = 0\nend = 60\n",
                           "hero.fbx.meshfs: clip 'a': ends at tick 60, after the end of its take (20 ticks at 24 "
                           "a second)")]:
            with open(os.path.join(self.src, "hero.fbx.meshfs"), "w") as f:
                f.write(text)
            p = convert(self.src, os.path.join(self.tmp, "bad"), "-f", "dem")
            self.assertEqual(p.returncode, 1)
            self.assertIn("hero.fbx: " + msg, p.stderr)


class Inspect(TreeCase):
    def test_inspect_shows_what_applied_and_from_where(self):
        shutil.copytree(CRATE, os.path.join(self.src, "crate"))
        with open(os.path.join(self.src, ".meshfs"), "w") as f:
            f.write("# studio defaults\nunit = cm\nfmd_raw = true\n")
        with open(os.path.join(self.src, "crate", "crate.obj.meshfs"), "w") as f:
            f.write("up = z\nfmd_raw = false\n")
        insp = lambda *a: subprocess.run([tool("meshfs-inspect"), "--settings", self.src] + list(a),
                                         capture_output=True, text=True)
        p = insp(os.path.join(self.src, "crate", "crate.obj"), "crate/crate.obj")
        self.assertEqual(p.returncode, 0, p.stderr)
        block = ("crate/crate.obj: settings\n"
                 "up = z  (crate/crate.obj.meshfs:1)\n"
                 "fmd_raw = false  (crate/crate.obj.meshfs:2)\n"
                 "unit = 0.01 m  (.meshfs:2)\n")
        self.assertEqual(p.stdout, block * 2)
        with open(os.path.join(self.src, "crate", ".meshfs"), "w") as f:
            f.write("up = sideways\n")
        p = insp("crate/crate.obj")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "meshfs-inspect: crate/.meshfs: line 1: key 'up': 'sideways' is not one of "
                                   "x, y, z, -x, -y, -z\n")
        p = insp("/etc/hostname")
        self.assertEqual((p.returncode, p.stderr), (1, "meshfs-inspect: /etc/hostname: not beneath %s\n"
                                                    % os.path.realpath(self.src)))


class Errors(TreeCase):
    def setUp(self):
        super().setUp()
        shutil.copytree(CRATE, os.path.join(self.src, "crate"))
        self.out = os.path.join(self.tmp, "out")

    def fails(self, name, data, message):
        path = os.path.join(self.src, name)
        with open(path, "wb") as f:
            f.write(data)
        p = convert(self.src, self.out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("crate/crate.obj: " + message, p.stderr)
        written = [f for _, _, fs in os.walk(self.out) for f in fs]
        self.assertEqual(written, [])  # nothing written
        os.unlink(path)

    def test_malformed_and_hostile_files_name_file_line_and_key(self):
        self.fails("crate/.meshfs", b"up = y\nscle = 2\n",
                   "crate/.meshfs: line 2: key 'scle': unknown key (docs/settings.md lists them)")
        self.fails("crate/crate.obj.meshfs", b"unit = furlong\n",
                   "crate/crate.obj.meshfs: line 1: key 'unit': 'furlong' is not one of mm, cm, m, in, ft")
        self.fails(".meshfs", b"[clip walk\nstart = 1\n",
                   ".meshfs: line 1: not 'key = value', '[clip NAME]' or a comment")
        self.fails(".meshfs", b"\x7fELF\x02\x01\x01\x00" + os.urandom(64),
                   ".meshfs: holds a NUL byte: not a settings file (binary?)")
        self.fails("crate/.meshfs", b"# " + b"x" * (70 * 1024) + b"\n",
                   "crate/.meshfs: 71683 bytes, more than a settings file may hold (65536)")
        self.fails("crate/.meshfs", b"texture = ../../../etc/shadow\n",
                   "crate/.meshfs: line 1: key 'texture': '../../../etc/shadow': a path may not hold '..' or "
                   "an empty name")
        self.fails("crate/.meshfs", b"up = y\nforward = -y\n",
                   "settings: up (y, crate/.meshfs:1) and forward (-y, crate/.meshfs:2) are on one axis")
        self.fails("crate/.meshfs", b"formats = gmf:lgepkg\n",
                   "crate/.meshfs: line 1: key 'formats': lgepkg is made of the model's vrt, tri, tex and "
                   "sph: list them too")
        # a folder of that name is no settings file: as if absent
        os.mkdir(os.path.join(self.src, "crate", "crate.obj.meshfs"))
        cache = os.path.join(self.tmp, "cache")
        for state in ("converted", "up to date"):
            p = convert(self.src, self.out, cache=cache)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("meshfs-convert: %d converted, %d up to date, 0 failed" %
                          ((1, 0) if state == "converted" else (0, 1)), p.stderr)

    def test_a_deep_tree_reads_every_level(self):
        deep = os.path.join(self.src, *["d%d" % i for i in range(40)])
        os.makedirs(deep)
        shutil.copy(os.path.join(CRATE, "crate.obj"), deep)
        with open(os.path.join(self.src, "d0", "d1", ".meshfs"), "w") as f:
            f.write("scale = 3\n")
        p = convert(self.src, self.out, "-f", "gmf")
        self.assertEqual(p.returncode, 0, p.stderr)
        rel = os.path.relpath(deep, self.src)
        self.assertEqual(bounds(os.path.join(self.out, rel, "crate.gmf")), ((-1.5, 0, -1.5), (1.5, 3, 1.5)))


class Mounted(TreeCase):
    def setUp(self):
        super().setUp()
        shutil.copytree(CRATE, os.path.join(self.src, "crate"))

    def test_a_sidecar_edited_under_a_live_mount(self):
        side = os.path.join(self.src, "crate", "crate.obj.meshfs")
        gmf = os.path.join(self.mnt, "crate", "crate.gmf")
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1", "hide_sources") as mnt:
            self.assertEqual(bounds(gmf), ((-0.5, 0, -0.5), (0.5, 1, 0.5)))
            before = mnt.stats()["conversions"]
            with open(side, "w") as f:
                f.write("scale = 2\n")
            time.sleep(1.3)
            self.assertEqual(bounds(gmf), ((-1, 0, -1), (1, 2, 1)))
            self.assertEqual(mnt.stats()["conversions"], before + 1)
            # with hide_sources the settings file is hidden like the model
            self.assertNotIn("crate.obj.meshfs", os.listdir(os.path.join(self.mnt, "crate")))
            with open(side, "w") as f:
                f.write("scale = lots\n")
            time.sleep(1.3)
            with self.assertRaises(OSError) as e:
                read(gmf)
            self.assertEqual(e.exception.errno, errno.EIO)
            self.assertEqual(os.getxattr(gmf, "user.meshfs.error").decode(),
                             "crate/crate.obj.meshfs: line 1: key 'scale': 'lots' is not a number")
            os.unlink(side)
            time.sleep(1.3)
            self.assertEqual(bounds(gmf), ((-0.5, 0, -0.5), (0.5, 1, 0.5)))
        with Mount(self.src, self.mnt, self.cache) as mnt:
            # without hide_sources it shows as the plain file it is
            with open(side, "w") as f:
                f.write("scale = 2\n")
            self.assertEqual(read(os.path.join(self.mnt, "crate", "crate.obj.meshfs")), b"scale = 2\n")


VIEWS = ("fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex")


class Formats(TreeCase):
    """formats = decides which views a model shows: in meshfs-convert, the
    views left out are not written and no failure; through a mount, they
    are not listed and answer ENOENT once a conversion has read the file,
    and an edit of it shows the others, with no remount."""

    def setUp(self):
        super().setUp()
        for d in ("props", "chars", "chars/hero"):
            os.makedirs(os.path.join(self.src, d), exist_ok=True)
        for d in ("props", "chars", "chars/hero"):
            for n in ("crate.obj", "crate.mtl"):
                shutil.copy(os.path.join(CRATE, n), os.path.join(self.src, d))
            shutil.copytree(os.path.join(CRATE, "textures"), os.path.join(self.src, d, "textures"))
        self.write("chars/.meshfs", "formats = dem:gmf\n")        # the folder and below
        self.write("chars/hero/crate.obj.meshfs", "formats = fmd:fmi\n")  # the sidecar wins

    def write(self, rel, text):
        with open(os.path.join(self.src, rel), "w") as f:
            f.write(text)

    def shown(self, root, d):
        return sorted(n.rsplit(".", 1)[1] for n in os.listdir(os.path.join(root, d))
                      if n.startswith("crate.") and n.rsplit(".", 1)[1] in VIEWS)

    def test_convert_writes_only_the_views_a_model_shows(self):
        out, report = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "r.json")
        cache = os.path.join(self.tmp, "cache")
        for counts in ("3 converted, 0 up to date, 0 failed", "0 converted, 3 up to date, 0 failed"):
            p = convert(self.src, out, "--report", report, cache=cache)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("meshfs-convert: %s\n" % counts, p.stderr)
            self.assertNotIn("FAILED", p.stdout)
            self.assertEqual(self.shown(out, "props"), sorted(VIEWS))
            self.assertEqual(self.shown(out, "chars"), ["dem", "gmf"])
            self.assertEqual(self.shown(out, "chars/hero"), ["fmd", "fmi"])
            # the package holds the models that show its four views
            self.assertTrue(os.path.exists(os.path.join(out, "props", "game_resources.lgepkg")))
            self.assertFalse(os.path.exists(os.path.join(out, "chars", "game_resources.lgepkg")))
            with open(report) as f:
                rows = {r["model"]: r for r in map(json.loads, f) if "model" in r}
            hero = rows["chars/hero/crate.obj"]
            self.assertEqual((hero["state"] in ("converted", "up to date"), hero["ok"], hero["error"]),
                             (True, True, ""))
            self.assertEqual(hero["outputs"]["gmf"]["error"],
                             "not shown: chars/hero/crate.obj.meshfs:1 sets formats = fmd:fmi")
        # the views it shows are those of a run without the file
        plain = os.path.join(self.tmp, "plain")
        os.unlink(os.path.join(self.src, "chars", ".meshfs"))
        p = convert(self.src, plain)
        self.assertEqual(p.returncode, 0, p.stderr)
        for v in ("dem", "gmf"):
            self.assertEqual(read(os.path.join(out, "chars", "crate." + v)),
                             read(os.path.join(plain, "chars", "crate." + v)))

    def test_a_mount_lists_only_the_views_a_model_shows(self):
        side = os.path.join(self.src, "chars", "hero", "crate.obj.meshfs")
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1") as mnt:
            for d in ("props", "chars", "chars/hero"):  # read one view each: converted
                with open(os.path.join(self.mnt, d, "crate.sph" if d == "props" else
                                       "crate.gmf" if d == "chars" else "crate.fmd"), "rb") as f:
                    self.assertGreater(len(f.read()), 0)
            self.assertEqual(self.shown(self.mnt, "props"), sorted(VIEWS))
            self.assertEqual(self.shown(self.mnt, "chars"), ["dem", "gmf"])
            self.assertEqual(self.shown(self.mnt, "chars/hero"), ["fmd", "fmi"])
            with self.assertRaises(OSError) as e:
                os.stat(os.path.join(self.mnt, "chars", "hero", "crate.gmf"))
            self.assertEqual(e.exception.errno, errno.ENOENT)
            with self.assertRaises(FileNotFoundError):
                open(os.path.join(self.mnt, "chars", "crate.vrt"), "rb")
            # the sidecar edited: other views, no remount
            with open(side, "w") as f:
                f.write("formats = gmf\n")
            time.sleep(1.3)
            with open(os.path.join(self.mnt, "chars", "hero", "crate.gmf"), "rb") as f:
                self.assertGreater(len(f.read()), 100)
            self.assertEqual(self.shown(self.mnt, "chars/hero"), ["gmf"])
            with self.assertRaises(FileNotFoundError):
                open(os.path.join(self.mnt, "chars", "hero", "crate.fmd"), "rb")
            # and removed: the folder's file above applies
            os.unlink(side)
            time.sleep(1.3)
            with open(os.path.join(self.mnt, "chars", "hero", "crate.dem"), "rb") as f:
                self.assertGreater(len(f.read()), 0)
            self.assertEqual(self.shown(self.mnt, "chars/hero"), ["dem", "gmf"])
            # no views of the settings files themselves (they are no models)
            self.assertEqual(sorted(n for n in os.listdir(os.path.join(self.mnt, "chars"))
                                    if not n.startswith("crate.")),
                             [".meshfs", "hero", "textures"])
            self.assertTrue(mnt.alive())


@unittest.skipUnless(os.geteuid() == 0, "needs root to make a second user")
class AnotherUser(TreeCase):
    """A second user who can write into a shared folder must not steer the
    owner's model: their settings file fails it, named, until it is gone or
    chowned."""

    USER = "mfset%d" % (os.getpid() % 10000)

    def setUp(self):
        super().setUp()
        subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", self.USER], check=True)
        self.addCleanup(subprocess.run, ["userdel", "-f", self.USER], capture_output=True)
        self.uid = pwd.getpwnam(self.USER).pw_uid
        shutil.copytree(CRATE, os.path.join(self.src, "crate"))
        os.chmod(os.path.join(self.src, "crate"), 0o1777)  # a shared drop folder
        os.chmod(self.tmp, 0o755)

    def test_a_file_of_another_user_fails_the_model_until_chowned(self):
        rogue = os.path.join(self.src, "crate", ".meshfs")
        with open(rogue, "w") as f:
            f.write("scale = 1000\n")
        os.chown(rogue, self.uid, -1)
        gmf = os.path.join(self.mnt, "crate", "crate.gmf")
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1") as mnt:
            with self.assertRaises(OSError) as e:
                read(gmf)
            self.assertEqual(e.exception.errno, errno.EIO)
            self.assertEqual(os.getxattr(gmf, "user.meshfs.error").decode(),
                             "crate/.meshfs: owned by uid %d, not by the model's owner (uid 0) or root: not "
                             "applied; its owner or root may chown it, or remove it" % self.uid)
            os.chown(rogue, 0, -1)  # the owner adopts it: it applies
            time.sleep(1.3)
            self.assertEqual(bounds(gmf), ((-500, 0, -500), (500, 1000, 500)))
            self.assertGreaterEqual(mnt.stats()["conversions"], 2)


if __name__ == "__main__":
    run_tests()

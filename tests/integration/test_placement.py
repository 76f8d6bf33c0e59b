#!/usr/bin/env python3
"""Where meshfs puts things: FBX transform chains, and declared units and up axes.

placement_models.py writes small files whose correct placement follows from
the formats' own rules and computes it in python:

  * ASCII FBX 7.4 files using PostRotation, PreRotation with a rotation
    pivot, scaling pivots and offsets, geometric transforms on a parent with
    a child, animated joints with a PreRotation (with and without a pivot),
    a skinned mesh under a joint with a PostRotation, a joint turning
    about a rotation pivot with a PostRotation too, a skinned mesh
    whose node has a geometric transform, and nodes with InheritType RrSs
    and Rrs under scaled parents (the FBX SDK's CalculateGlobalTransform;
    assimp ignores InheritType)
    (shared/research/fbx_transforms.md: assimp 5.2.5's folded path gets
    several of these wrong, so meshfs keeps assimp's helper chains and folds
    them itself);
  * 3MF and AMF files with declared units (Z up by definition) and OpenGEX
    files with Metric distance and up.

Views are judged through formats that hold model space: .vrt (every vertex,
canonical frame), .sph, and .dem (vertices, plus per-frame skinned bounds and
joint transforms of its sequences).  assimp's own command line exporter
(pivots preserved, package assimp-utils) is a second witness for the FBX bind
poses, and for the raw Z-up coordinates of assimp-testmodels' .blend and
OpenGEX files.
"""

import math
import os
import shutil
import subprocess
import unittest

import placement_models as pm
from common import CORPUS, convert, inspect, run_tests, tempdir, tool

TOL = 1e-4  # absolute, after scaling to metres; relative for large values
HELPER_MARK = b"$AssimpFbx$"

# assimp-testmodels files that declare Z up (Blender is Z up by definition;
# the OpenGEX example says Metric "up" "z"), chosen so that no box is
# symmetric under the Z-up turn.  A human figure stands along its up axis.
CORPUS_ZUP = ["BLEND/4Cubes4Mats_248.blend", "BLEND/CubeHierarchy_248.blend",
              "BLEND/HUMAN.blend", "BLEND/MirroredCube_252.blend",
              "BLEND/Suzanne_248.blend",
              "BLEND/TexturedCube_ImageGlob_248.blend", "BLEND/test_279.blend",
              "OpenGEX/Example.ogex"]
STANDING = "BLEND/HUMAN.blend"


def close(a, b):
    return abs(a - b) <= TOL * max(1.0, abs(b))


def box_close(got, want):
    return (got[0] is not None and got[1] is not None
            and all(close(g, w) for g, w in zip(got[0], want[0]))
            and all(close(g, w) for g, w in zip(got[1], want[1])))


def tools_missing():
    for name in ("meshfs-convert", "meshfs-inspect"):
        if not os.access(tool(name), os.X_OK):
            return "%s not built" % tool(name)
    return None


def obj_box(path):
    pts = []
    with open(path) as f:
        for line in f:
            if line.startswith("v "):
                pts.append(tuple(float(x) for x in line.split()[1:4]))
    return pm.box_of(pts)


def assimp_export_box(model, workdir):
    """Box of every vertex of `assimp export model x.obj` (node transforms
    applied by assimp's OBJ exporter), or None when assimp-utils is missing."""
    exe = shutil.which("assimp")
    if not exe:
        return None
    out = os.path.join(workdir, os.path.basename(model) + ".obj")
    p = subprocess.run([exe, "export", model, out], capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not os.path.exists(out):
        raise AssertionError("assimp export %s failed (%d): %s" % (model, p.returncode, p.stderr))
    return obj_box(out)


# ---- .dem, read by its documented grammar (docs/formats/dem.md) ----------

def dem_to_canonical_box(mn, mx):
    """DEM is Blender's frame: (x, y, z) there is (x, -z, y) canonical, so a
    DEM box maps back by (X, Y, Z) -> (X, Z, -Y)."""
    return ((mn[0], mn[2], -mx[1]), (mx[0], mx[2], -mn[1]))


def quat_matrix(x, y, z, w):
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), 0],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), 0],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), 0],
            [0, 0, 0, 1]]


def read_dem_sequence(path):
    """The first sequence: rate, joint names and parents, per-frame bounds
    and per-frame joint local transforms."""
    seq = {"joints": [], "bounds": [], "frames": {}}
    inside = False
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "sequence":
                if inside:
                    break
                inside = True
            elif not inside:
                continue
            elif w[0] == "rate":
                seq["rate"] = int(w[1])
            elif w[0] == "j":
                seq["joints"].append((" ".join(w[1:-3]), int(w[-3])))
            elif w[0] == "b":
                v = [float(x) for x in w[1:]]
                seq["bounds"].append(dem_to_canonical_box(v[:3], v[3:]))
            elif w[0] == "f":
                v = [float(x) for x in w[3:]]
                seq["frames"].setdefault(int(w[1]), {})[int(w[2])] = v
    if not inside:
        raise AssertionError("%s: no sequence" % path)
    return seq


def dem_joint_world(seq, frame, joint):
    """World position (canonical) of a joint at a frame, composing the
    joints' local T.R.S from the f lines up the parent chain."""
    mats = {}

    def world(j):
        if j in mats:
            return mats[j]
        t = seq["frames"][frame][j]
        qx, qy, qz = t[3:6]
        qw = math.sqrt(max(0.0, 1 - qx * qx - qy * qy - qz * qz))
        local = pm.mul(pm.translate(t[0:3]), quat_matrix(qx, qy, qz, qw), pm.scaling(t[6:9]))
        parent = seq["joints"][j][1]
        mats[j] = local if parent < 0 else pm.mul(world(parent), local)
        return mats[j]
    names = [n for n, _ in seq["joints"]]
    p = pm.point(world(names.index(joint)), (0, 0, 0))
    return (p[0], p[2], -p[1])


# ---- the tests -------------------------------------------------------------

class Placement(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tools_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempdir()
        cls.src = os.path.join(cls.tmp.name, "src")
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.models = pm.write_all(cls.src)
        p, rows = convert([cls.src], cls.out)
        cls.rows = {r["model"]: r for r in rows}
        paths = [o["path"] for r in rows if r["ok"] for f, o in r["outputs"].items()
                 if f in ("vrt", "dem", "sph")]
        cls.summary = inspect(paths, check=True) if paths else {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def row(self, name):
        r = self.rows.get(name)
        self.assertIsNotNone(r, "%s was not converted: %s" % (name, sorted(self.rows)))
        self.assertTrue(r["ok"], "%s: %s" % (name, r["error"]))
        return r

    def view(self, name, fmt):
        s = self.summary[self.row(name)["outputs"][fmt]["path"]]
        self.assertTrue(s["ok"], s["error"])
        return s

    def fbx(self):
        return [(n, m) for n, m in sorted(self.models.items()) if isinstance(m, pm.FbxModel)]

    def test_fbx_bind_pose_boxes(self):
        """.vrt and .dem hold every vertex in model space: their box is the
        box of the FBX rule's placement."""
        for name, m in self.fbx():
            want = pm.box_of(m.static_points())
            for fmt in ("vrt", "dem"):
                with self.subTest(model=name, format=fmt):
                    s = self.view(name, fmt)
                    got = (s["cmin"], s["cmax"])
                    self.assertTrue(box_close(got, want), "%s.%s: %s, FBX rule %s"
                                    % (name, fmt, got, want))

    def test_fbx_sphere_holds_every_vertex(self):
        for name, m in self.fbx():
            with self.subTest(model=name):
                sph = self.view(name, "sph")["sphere"]
                for p in m.static_points():
                    self.assertLessEqual(math.dist(p, sph["center"]), sph["radius"] * (1 + 1e-5) + 1e-6,
                                         "%s.sph %s misses %s" % (name, sph, p))

    def test_fbx_inherit_type(self):
        """InheritType Rrs: the child turned 90 deg under a parent scaled
        (2, 3, 1) keeps its own size, 0.5 x 1 at x 1.5..2, y 0..1 (RSrs
        would make it 1 x 3); its own child sits 1 along the kid's turned x,
        at (2, 1, 0), not (2, 3, 0).  RrSs: the parent's (2, 1, 1)
        stretches the kid along its own x (test_fbx_bind_pose_boxes)."""
        s = self.view("inherit_rrs.fbx", "vrt")
        want = ((-0.2, -0.3, -0.1), (2.1, 1.1, 0.25))
        self.assertTrue(box_close(pm.box_of(self.models["inherit_rrs.fbx"].static_points()), want))
        self.assertTrue(box_close((s["cmin"], s["cmax"]), want), s)

    def test_fbx_child_of_post_rotation(self):
        """The issue's numbers: the child cube's centre at Rz(-40) (1, 0, 0)."""
        s = self.view("post_rotation.fbx", "vrt")
        centre = [(a + b) / 2 for a, b in zip(s["cmin"], s["cmax"])]
        want = (math.cos(math.radians(40)), -math.sin(math.radians(40)), 0)
        for g, w in zip(centre, want):
            self.assertAlmostEqual(g, w, places=5)

    def test_fbx_geometric_not_inherited(self):
        """The child of a parent with a geometric transform sits at (1, 0, 0)
        (assimp's folding put it at (0, 4, 0)): the box top is the parent's
        cube at y 1..3, not the child at 4."""
        s = self.view("geometric.fbx", "vrt")
        self.assertAlmostEqual(s["cmax"][1], 3.0, places=5)
        self.assertAlmostEqual(s["cmax"][0], 1.1, places=5)
        # the instance of the same geometry elsewhere keeps its own shape
        self.assertAlmostEqual(s["cmin"][0], -3.5, places=5)
        self.assertEqual(self.row("geometric.fbx")["triangles"], 36)

    def test_fbx_no_helper_names_in_any_view(self):
        for name, _ in self.fbx():
            for fmt, o in self.row(name)["outputs"].items():
                with self.subTest(model=name, format=fmt):
                    with open(o["path"], "rb") as f:
                        data = f.read()
                    if o["path"].endswith(".fmd"):
                        import gzip
                        data = gzip.decompress(data[6:])
                    self.assertNotIn(HELPER_MARK, data)

    def test_fbx_node_counts(self):
        """Helpers are gone: RootNode plus the file's models."""
        for name, m in self.fbx():
            with self.subTest(model=name):
                self.assertEqual(self.row(name)["nodes"], 1 + len(m.nodes))

    def test_fbx_animated_skin_at_key_times(self):
        """.dem sequences: the skinned box and the bone's world position at
        each key time follow the FBX rule (PreRotation applied once,
        PostRotation inverted, pivot channels composed)."""
        for name, m in self.fbx():
            if not m.frames:
                continue
            seq = read_dem_sequence(self.row(name)["outputs"]["dem"]["path"])
            bone = m.skins[0].bone
            for key in m.frames:
                frame = key * seq["rate"] // pm.FPS
                self.assertEqual(frame * pm.FPS, key * seq["rate"], "key %d is not on a .dem frame" % key)
                with self.subTest(model=name, key=key):
                    want = pm.box_of(m.skinned_points(key))
                    got = seq["bounds"][frame]
                    self.assertTrue(box_close(got, want), "%s frame %d: skinned box %s, FBX rule %s"
                                    % (name, frame, got, want))
                    pos = dem_joint_world(seq, frame, bone.name)
                    wpos = pm.point(bone.world(key), (0, 0, 0))
                    self.assertTrue(all(close(g, w) for g, w in zip(pos, wpos)),
                                    "%s frame %d: joint %s at %s, FBX rule %s"
                                    % (name, frame, bone.name, pos, wpos))

    def test_fbx_animated_skin_between_keys(self):
        """.dem sequences between the keys: a turn about a pivot, or under a
        PreRotation or PostRotation, stays on the FBX rule's arc at every
        frame (the Euler curves are linear; the chain composes them)."""
        for name, m in self.fbx():
            if not m.frames:
                continue
            seq = read_dem_sequence(self.row(name)["outputs"]["dem"]["path"])
            bone = m.skins[0].bone
            first, last = m.frames[0], m.frames[-1]
            self.assertEqual(seq["rate"], pm.FPS)
            for frame in range(first, last + 1):
                with self.subTest(model=name, frame=frame):
                    want = pm.box_of(m.skinned_points(frame))
                    got = seq["bounds"][frame]
                    self.assertTrue(box_close(got, want), "%s frame %d: skinned box %s, FBX rule %s"
                                    % (name, frame, got, want))
                    pos = dem_joint_world(seq, frame, bone.name)
                    wpos = pm.point(bone.world(frame), (0, 0, 0))
                    self.assertTrue(all(close(g, w) for g, w in zip(pos, wpos)),
                                    "%s frame %d: joint %s at %s, FBX rule %s"
                                    % (name, frame, bone.name, pos, wpos))

    def test_fbx_bind_pose_second_witness(self):
        """assimp's OBJ export (pivots preserved) agrees on the bind poses
        (except where a node's InheritType is not RSrs: assimp ignores it)."""
        if not shutil.which("assimp"):
            self.skipTest("assimp (package assimp-utils) not installed")
        for name, m in self.fbx():
            if any(n.inherit != 1 for n in m.nodes):
                continue
            with self.subTest(model=name):
                got = assimp_export_box(os.path.join(self.src, name), self.tmp.name)
                self.assertTrue(box_close(got, pm.box_of(m.static_points())),
                                "%s: assimp export %s" % (name, got))

    def test_declared_units_and_up(self):
        for name, m in sorted(self.models.items()):
            if not isinstance(m, pm.UnitModel):
                continue
            want = m.expected_box()
            for fmt in ("vrt", "dem"):
                with self.subTest(model=name, format=fmt):
                    s = self.view(name, fmt)
                    got = (s["cmin"], s["cmax"])
                    self.assertTrue(box_close(got, want), "%s (%s).%s: %s, expected %s"
                                    % (name, m.doc, fmt, got, want))

    def test_source_frame_keeps_declared_numbers(self):
        out = os.path.join(self.tmp.name, "raw")
        p, rows = convert([os.path.join(self.src, "3mf_inch.3mf"), os.path.join(self.src, "ogex_cm_zup.ogex")],
                          out, "--source-frame")
        self.assertEqual(p.returncode, 0, p.stderr)
        for r in rows:
            with self.subTest(model=r["model"]):
                s = inspect([r["outputs"]["vrt"]["path"]])[r["outputs"]["vrt"]["path"]]
                self.assertTrue(box_close((s["cmin"], s["cmax"]), pm.box_of(pm.UNIT_BOX)), s)

    def test_bad_declarations_fail_with_reason(self):
        src = os.path.join(self.tmp.name, "bad")
        os.makedirs(src)
        with open(os.path.join(src, "furlong.3mf"), "wb") as f:
            f.write(pm.threemf("furlong"))
        with open(os.path.join(src, "sideways.ogex"), "wb") as f:
            f.write(pm.ogex("1", "x"))
        with open(os.path.join(src, "negative.ogex"), "wb") as f:
            f.write(pm.ogex("-2", "z"))
        p, rows = convert([src], os.path.join(self.tmp.name, "bad-out"))
        self.assertNotEqual(p.returncode, 0)
        errors = {r["model"]: r["error"] for r in rows}
        self.assertIn('unit "furlong"', errors.get("furlong.3mf", ""))
        self.assertIn('"up" is "x"', errors.get("sideways.ogex", ""))
        self.assertIn('"distance" must be a positive number', errors.get("negative.ogex", ""))
        self.assertTrue(all(not r["ok"] for r in rows), rows)


class CorpusZUp(unittest.TestCase):
    """assimp-testmodels' Blender and OpenGEX files: assimp hands them over
    as written (Z up); meshfs turns them to +Y up."""

    @classmethod
    def setUpClass(cls):
        why = tools_missing()
        if why:
            raise unittest.SkipTest(why)
        models = [m for m in CORPUS_ZUP if os.path.exists(os.path.join(CORPUS, m))]
        if not models:
            raise unittest.SkipTest("assimp-testmodels not installed")
        cls.tmp = tempdir()
        cls.models = models
        p, rows = convert([os.path.join(CORPUS, m) for m in models], cls.tmp.name)
        cls.rows = {}
        for r in rows:
            for m in models:
                if m.endswith("/" + r["model"]) or m == r["model"]:
                    cls.rows[m] = r
        paths = [r["outputs"]["vrt"]["path"] for r in rows if r["ok"]]
        cls.summary = inspect(paths, check=True) if paths else {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def vrt_box(self, m):
        r = self.rows.get(m)
        self.assertTrue(r and r["ok"], "%s: %s" % (m, r and r["error"]))
        s = self.summary[r["outputs"]["vrt"]["path"]]
        return s["cmin"], s["cmax"]

    def test_turned_to_y_up(self):
        if not shutil.which("assimp"):
            self.skipTest("assimp (package assimp-utils) not installed")
        for m in self.models:
            with self.subTest(model=m):
                raw = assimp_export_box(os.path.join(CORPUS, m), self.tmp.name)
                want = pm.box_of(pm.zup_to_canonical(p) for p in pm.box_corners(*raw))
                got = self.vrt_box(m)
                self.assertTrue(box_close(got, want), "%s: %s, Z-up rule on assimp's %s gives %s"
                                % (m, got, raw, want))

    def test_human_stands_up(self):
        if STANDING not in self.models:
            self.skipTest("%s missing" % STANDING)
        lo, hi = self.vrt_box(STANDING)
        ext = [b - a for a, b in zip(lo, hi)]
        self.assertEqual(ext.index(max(ext)), 1, "the figure's height is not along +Y: %s" % ext)


if __name__ == "__main__":
    run_tests()

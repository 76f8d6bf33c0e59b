#!/usr/bin/env python3
"""Node animation (issue 29): nodes that move without bones.

Small glTF files whose motion follows from the glTF 2.0 spec alone (a node
is T * R * S, section 5.25; LINEAR rotations slerp, STEP holds each key's
value until the next, CUBICSPLINE is the Hermite spline of section C) are
converted, and the views are played by their own formats' rules, never by
meshfs's writer:

  * .dem: the seed's and research's MD5-style skinning (docs/formats/dem.md,
    research/dem_vrt.md Topic A): joint world = parent world x local T.R.S of
    the frame's `f` line; a vertex = sum of bias x joint world x weight
    position; a vertex without weights stays where its `v` line puts it;
  * .gmf: the limbs' and bones' ANIMATIONKEYS composed down the block tree
    as a loader that plays keys does (research/gmf.md: one local 4x4 per
    frame, row vectors, global = local x parent global), skinned vertices by
    vertex x host x inverse(bind) x pose.

Each case is checked at every frame, most of them between keys.
"""

import math
import os
import struct
import unittest

from common import convert, inspect, run_tests, tempdir, tool
from gltf_build import Gltf, box
from gmf_play import gmf_points

FPS = 30  # glTF's 1000 ticks per second is not a whole frame rate: both views use 30


# ---- small matrix helpers (column vectors, row-major lists of rows) ---------

def ident():
    return [[float(r == c) for c in range(4)] for r in range(4)]


def mul(*ms):
    r = ms[0]
    for m in ms[1:]:
        r = [[sum(r[i][k] * m[k][j] for k in range(4)) for j in range(4)] for i in range(4)]
    return r


def translate(v):
    m = ident()
    for i in range(3):
        m[i][3] = v[i]
    return m


def scaling(v):
    m = ident()
    for i in range(3):
        m[i][i] = v[i]
    return m


def quat_matrix(q):
    x, y, z, w = q
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), 0],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), 0],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), 0],
            [0, 0, 0, 1]]


def axis_quat(axis, deg):
    h = math.radians(deg) / 2
    s = math.sin(h)
    return [axis[0] * s, axis[1] * s, axis[2] * s, math.cos(h)]


def point(m, p):
    return [sum(m[i][k] * p[k] for k in range(3)) + m[i][3] for i in range(3)]


def trs(t=(0, 0, 0), q=(0, 0, 0, 1), s=(1, 1, 1)):
    return mul(translate(t), quat_matrix(q), scaling(s))


def box_of(pts):
    return ([min(p[i] for p in pts) for i in range(3)], [max(p[i] for p in pts) for i in range(3)])


# ---- glTF files, built by the spec: gltf_build.py -------------------------


def slerp(a, b, f):
    d = sum(x * y for x, y in zip(a, b))
    if d < 0:
        b, d = [-x for x in b], -d
    if d > 0.9999999:
        r = [x + (y - x) * f for x, y in zip(a, b)]
    else:
        th = math.acos(d)
        r = [(math.sin((1 - f) * th) * x + math.sin(f * th) * y) / math.sin(th) for x, y in zip(a, b)]
    n = math.sqrt(sum(x * x for x in r))
    return [x / n for x in r]


def sample(times, values, t, interp="LINEAR"):
    """A glTF sampler at time t (spec, appendix C)."""
    if interp == "CUBICSPLINE":
        keys = [values[3 * i + 1] for i in range(len(times))]
    else:
        keys = values
    if t <= times[0]:
        return list(keys[0])
    if t >= times[-1]:
        return list(keys[-1])
    i = max(k for k in range(len(times)) if times[k] <= t)
    if interp == "STEP":
        return list(keys[i])
    dt = times[i + 1] - times[i]
    u = (t - times[i]) / dt
    if interp == "CUBICSPLINE":
        p0, b0 = values[3 * i + 1], values[3 * i + 2]
        a1, p1 = values[3 * (i + 1)], values[3 * (i + 1) + 1]
        u2, u3 = u * u, u * u * u
        r = [(2 * u3 - 3 * u2 + 1) * p0[c] + (u3 - 2 * u2 + u) * dt * b0[c]
             + (-2 * u3 + 3 * u2) * p1[c] + (u3 - u2) * dt * a1[c] for c in range(len(p0))]
        if len(r) == 4:
            n = math.sqrt(sum(x * x for x in r))
            r = [x / n for x in r]
        return r
    if len(keys[0]) == 4:
        return slerp(keys[i], keys[i + 1], u)
    return [x + (y - x) * u for x, y in zip(keys[i], keys[i + 1])]


# ---- .dem, played by its own rules -------------------------------------------

def dem_to_canonical(p):
    """DEM is Blender's frame: a DEM (X, Y, Z) is canonical (X, Z, -Y)."""
    return [p[0], p[2], -p[1]]


def dem_quat(x, y, z):
    return [x, y, z, math.sqrt(max(0.0, 1 - x * x - y * y - z * z))]


def read_dem(path):
    d = {"joints": [], "verts": [], "weights": [], "seq": None}
    mesh_w = None
    with open(path) as f:
        for line in f:
            w = line.split(" ")
            w[-1] = w[-1].rstrip("\n")
            k = w[0]
            if k == "sequence":
                d["seq"] = seq = {"joints": [], "bounds": [], "frames": {}}
                continue
            if d["seq"] is None:
                if k == "j":
                    d["joints"].append((w[1], int(w[2]), [float(x) for x in w[3:9]]))
                elif k == "mesh":
                    mesh_w = len(d["weights"])
                elif k == "v":
                    v = [float(x) for x in w[2:5]]
                    if len(w) == 15:
                        d["verts"].append((v, mesh_w + int(w[13]), int(w[14])))
                    else:
                        d["verts"].append((v, 0, 0))
                elif k == "w":
                    d["weights"].append((int(w[2]), float(w[3]), [float(x) for x in w[4:7]]))
            else:
                if k == "rate":
                    seq["rate"] = int(w[1])
                elif k == "j":
                    seq["joints"].append((w[1], int(w[2])))
                elif k == "b":
                    v = [float(x) for x in w[1:7]]
                    seq["bounds"].append(v)
                elif k == "f":
                    seq["frames"].setdefault(int(w[1]), {})[int(w[2])] = [float(x) for x in w[3:12]]
    return d


def dem_points(d, frame):
    """Every vertex at a frame, canonical frame."""
    seq = d["seq"]
    world = []
    for j, (name, parent) in enumerate(seq["joints"]):
        t = seq["frames"][frame][j]
        local = mul(translate(t[0:3]), quat_matrix(dem_quat(*t[3:6])), scaling(t[6:9]))
        world.append(local if parent < 0 else mul(world[parent], local))
    pts = []
    for pos, start, count in d["verts"]:
        if count == 0:
            pts.append(dem_to_canonical(pos))
            continue
        acc = [0.0, 0.0, 0.0]
        for i in range(start, start + count):
            joint, bias, wp = d["weights"][i]
            q = point(world[joint], wp)
            acc = [a + bias * x for a, x in zip(acc, q)]
        pts.append(dem_to_canonical(acc))
    return pts


# ---- .gmf, played as a loader that plays keys and skins does: gmf_play.py -

def far(got, want):
    """How far the two point sets are apart (each point to the nearest of
    the other set; the views order meshes their own way)."""
    return max(max(min(math.dist(a, b) for b in got) for a in want),
               max(min(math.dist(a, b) for b in want) for a in got))


# ---- the tests -------------------------------------------------------------

DOOR = box((0, 0, 0), (1, 2, 0.1))
SIZE_TOL = 2e-4  # of the model's size: the sampling rule's 1e-4 plus float text


class NodeAnimation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name in ("meshfs-convert",):
            if not os.access(tool(name), os.X_OK):
                raise unittest.SkipTest("%s not built" % tool(name))
        cls.tmp = tempdir()
        cls.src = os.path.join(cls.tmp.name, "src")
        os.makedirs(cls.src)
        cls.expect = {}
        cls.door()
        cls.piston()
        cls.prop_on_character()
        cls.step()
        cls.cubic()
        cls.out = os.path.join(cls.tmp.name, "out")
        p, rows = convert([cls.src], cls.out, "-f", "dem,gmf")
        cls.rows = {r["model"]: r for r in rows}
        # the same files through assimp's glTF reader (LINEAR tracks only:
        # assimp reads STEP and CUBICSPLINE values as linear keys, the
        # difference docs/import.md names)
        cls.out_assimp = os.path.join(cls.tmp.name, "out-assimp")
        p, rows = convert([cls.src], cls.out_assimp, "-f", "dem", "--importer", "assimp")
        cls.rows_assimp = {r["model"]: r for r in rows}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    # -- models and where glTF puts their vertices at time t --

    @classmethod
    def door(cls):
        """A door on a hinge at x = 1 turning 90 degrees about +Y over 1 s."""
        g = Gltf()
        m = g.box_mesh("door", DOOR)
        n = g.node(name="hinge", mesh=m, translation=[1, 0, 0])
        q0, q1 = [0, 0, 0, 1], axis_quat((0, 1, 0), 90)
        g.track(n, "rotation", [0, 1], [q0, q1])
        g.write(os.path.join(cls.src, "door.gltf"), [n])
        cls.expect["door.gltf"] = (1.0, lambda t: [point(trs((1, 0, 0), slerp(q0, q1, t)), p) for p in DOOR])

    @classmethod
    def piston(cls):
        """A rod sliding 1 m along its parent's +Y, the parent turned 30
        degrees about Z and moved to (2, 1, 0)."""
        g = Gltf()
        rod = box((-0.1, 0, -0.1), (0.1, 1, 0.1))
        m = g.box_mesh("rod", rod)
        n = g.node(name="rod", mesh=m)
        arm_q = axis_quat((0, 0, 1), 30)
        arm = g.node(name="arm", children=[n], translation=[2, 1, 0], rotation=arm_q)
        g.track(n, "translation", [0, 1], [[0, 0, 0], [0, 1, 0]])
        g.write(os.path.join(cls.src, "piston.gltf"), [arm])
        cls.expect["piston.gltf"] = (1.0, lambda t: [point(mul(trs((2, 1, 0), arm_q), translate((0, t, 0))), p)
                                                     for p in rod])

    @classmethod
    def prop_on_character(cls):
        """A skinned body of two joints, the upper one turning 90 degrees
        about Z over 1 s, and a rigid prop (no skin) held by that joint;
        the character's root node walks 1 m meanwhile.  glTF skins with the
        joints' global transforms (the root's walk included) and ignores
        the skinned mesh node's own transform (5.29)."""
        g = Gltf()
        body = box((-0.1, 0, -0.1), (0.1, 2, 0.1))
        jts = [(0, 0, 0, 0) if p[1] < 1 else (1, 0, 0, 0) for p in body]
        wts = [(1, 0, 0, 0)] * len(body)
        mb = g.box_mesh("body", body, jts, wts)
        prop = box((0, -0.05, -0.05), (0.5, 0.05, 0.05))
        mp = g.box_mesh("prop", prop)
        hand = g.node(name="hand", mesh=mp, translation=[0.2, 1, 0])
        upper = g.node(name="upper", children=[hand], translation=[0, 1, 0])
        lower = g.node(name="lower", children=[upper])
        skinned = g.node(name="body", mesh=mb, skin=0)
        ibm = [inv for inv in ([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
                               [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1, 0, 1])]
        g.skin([lower, upper], ibm)
        q0, q1 = [0, 0, 0, 1], axis_quat((0, 0, 1), 90)
        g.track(upper, "rotation", [0, 1], [q0, q1])
        root = g.node(name="character", children=[lower, skinned])
        # the whole character walks 1 m along +X: its skeleton hangs under it
        g.track(root, "translation", [0, 1], [[0, 0, 0], [1, 0, 0]])
        g.write(os.path.join(cls.src, "character.gltf"), [root])

        def at(t):
            walk = translate((t, 0, 0))
            up = mul(walk, translate((0, 1, 0)), quat_matrix(slerp(q0, q1, t)))
            skin = [point(mul(up, translate((0, -1, 0))), p) if p[1] >= 1 else point(walk, p) for p in body]
            return skin + [point(mul(up, translate((0.2, 1, 0))), p) for p in prop]
        cls.expect["character.gltf"] = (1.0, at)

    @classmethod
    def step(cls):
        """A STEP rotation: 0, 45 and 90 degrees about +Y at 0, 0.5 and 1 s."""
        g = Gltf()
        m = g.box_mesh("door", DOOR)
        n = g.node(name="hinge", mesh=m)
        times = [0, 0.5, 1]
        vals = [axis_quat((0, 1, 0), a) for a in (0, 45, 90)]
        g.track(n, "rotation", times, vals, "STEP")
        g.write(os.path.join(cls.src, "step.gltf"), [n])
        cls.expect["step.gltf"] = (1.0, lambda t: [point(quat_matrix(sample(times, vals, t, "STEP")), p)
                                                   for p in DOOR])

    @classmethod
    def cubic(cls):
        """A CUBICSPLINE translation with steep tangents, and a CUBICSPLINE
        rotation, on one node."""
        g = Gltf()
        m = g.box_mesh("door", DOOR)
        n = g.node(name="flyer", mesh=m)
        times = [0, 1, 2]
        tv = [[0, 0, 0], [0, 0, 0], [0, 6, 0],       # in, value, out
              [0, 0, 0], [1, 2, 0], [3, 0, 0],
              [0, -4, 0], [2, 0, 0], [0, 0, 0]]
        q45 = axis_quat((0, 1, 0), 45)
        rv = [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0.5, 0, 0],
              [0, 0, 0, 0], q45, [0, 0, 0, 0],
              [0, -0.3, 0, 0], axis_quat((0, 1, 0), 90), [0, 0, 0, 0]]
        g.track(n, "translation", times, tv, "CUBICSPLINE")
        g.track(n, "rotation", times, rv, "CUBICSPLINE")
        g.write(os.path.join(cls.src, "cubic.gltf"), [n])
        cls.expect["cubic.gltf"] = (2.0, lambda t: [point(trs(sample(times, tv, t, "CUBICSPLINE"),
                                                               sample(times, rv, t, "CUBICSPLINE")), p)
                                                    for p in DOOR])

    # -- checks --

    def output(self, model, fmt):
        r = self.rows.get(model)
        self.assertIsNotNone(r, "%s not converted: %s" % (model, sorted(self.rows)))
        self.assertTrue(r["ok"], r["error"])
        return r["outputs"][fmt]["path"]

    def tolerance(self, pts):
        lo, hi = box_of(pts)
        return SIZE_TOL * max(hi[i] - lo[i] for i in range(3)) + 1e-5

    def check_dem(self, model):
        duration, at = self.expect[model]
        d = read_dem(self.output(model, "dem"))
        self.assertIsNotNone(d["seq"], "%s: no sequence" % model)
        self.assertEqual(d["seq"]["rate"], FPS)
        n = round(duration * FPS) + 1
        self.assertEqual(len(d["seq"]["bounds"]), n)
        tol = self.tolerance(at(0))
        for f in range(n):
            want = at(f / FPS)
            got = dem_points(d, f)
            self.assertEqual(len(got), len(want))
            worst = far(got, want)
            self.assertLessEqual(worst, tol, "%s frame %d (%.3f s): a vertex is %.5f from where glTF puts it"
                                 % (model, f, f / FPS, worst))
            # b: model-space box (DEM frame) that holds the moved geometry
            b = d["seq"]["bounds"][f]
            lo, hi = box_of(want)
            blo = (b[0], b[2], -b[4])  # DEM (X, Y, Z) is canonical (X, Z, -Y)
            bhi = (b[3], b[5], -b[1])
            for i in range(3):
                self.assertLessEqual(blo[i], lo[i] + tol, "%s frame %d: bounds %s miss %s" % (model, f, b, (lo, hi)))
                self.assertGreaterEqual(bhi[i], hi[i] - tol, "%s frame %d: bounds %s miss %s" % (model, f, b, (lo, hi)))

    def check_gmf(self, model):
        duration, at = self.expect[model]
        frames = gmf_points(self.output(model, "gmf"))
        n = round(duration * FPS) + 1
        self.assertEqual(len(frames), n)
        tol = self.tolerance(at(0))
        for f in range(n):
            want = at(f / FPS)
            got = frames[f]
            self.assertEqual(len(got), len(want))
            worst = far(got, want)
            self.assertLessEqual(worst, tol, "%s frame %d: a vertex is %.5f from where glTF puts it"
                                 % (model, f, worst))

    def test_views_pass_check(self):
        """Every view reads back under meshfs-inspect --check (the DEM
        loader's rules: single spaces, no subnormals, 15-token skinned v)."""
        paths = [self.output(m, f) for m in sorted(self.expect) for f in ("dem", "gmf")]
        for path, row in inspect(paths, check=True).items():
            self.assertTrue(row["ok"], "%s: %s" % (path, row["error"]))

    def test_assimp_route_dem(self):
        for model in ("door.gltf", "piston.gltf", "character.gltf"):
            with self.subTest(model=model):
                rows = self.rows
                try:
                    self.rows = self.rows_assimp
                    self.check_dem(model)
                finally:
                    self.rows = rows

    def test_door_dem(self):
        self.check_dem("door.gltf")
        d = read_dem(self.output("door.gltf", "dem"))
        self.assertEqual([j[0] for j in d["joints"]], ["hinge"])
        # the door is bound whole to its node's joint
        self.assertTrue(all(c == 1 for _, _, c in d["verts"]))
        self.assertTrue(all(w[0] == 0 and w[1] == 1.0 for w in d["weights"]))

    def test_door_gmf(self):
        self.check_gmf("door.gltf")

    def test_piston_dem(self):
        self.check_dem("piston.gltf")

    def test_piston_gmf(self):
        self.check_gmf("piston.gltf")

    def test_prop_on_character_dem(self):
        """The body keeps its skin; the prop rides the joint that holds it."""
        self.check_dem("character.gltf")
        d = read_dem(self.output("character.gltf", "dem"))
        names = [j[0] for j in d["joints"]]
        self.assertIn("hand", names)
        hand = names.index("hand")
        self.assertEqual(d["joints"][hand][1], names.index("upper"))

    def test_prop_on_character_gmf(self):
        """The prop is a surface bound wholly to its bone; the skeleton's
        top bone is posed under the walking root."""
        self.check_gmf("character.gltf")

    def test_step_dem(self):
        self.check_dem("step.gltf")

    def test_step_gmf(self):
        self.check_gmf("step.gltf")

    def test_cubic_dem(self):
        self.check_dem("cubic.gltf")

    def test_cubic_gmf(self):
        self.check_gmf("cubic.gltf")


if __name__ == "__main__":
    run_tests()

#!/usr/bin/env python3
"""Small models whose placement is known from the formats' own rules.

Writes ASCII FBX 7.4 files that use the parts of the FBX transform that
assimp 5.2.5 gets wrong when it folds them (PostRotation, pivots, offsets,
geometric transforms, animated joints with pre-rotations), plus 3MF, AMF and
OpenGEX files that declare units and up axes.  For each it computes, here in
python and independently of meshfs and assimp, where every vertex must end
up in meshfs's canonical frame (right-handed, +Y up, metres):

  FBX local matrix (FBX SDK rule, shared/research/fbx_transforms.md):
      L = T . Roff . Rp . Rpre . R . Rpost^-1 . Rp^-1 . Soff . Sp . S . Sp^-1
  with R = Rz . Ry . Rx (RotationOrder XYZ, degrees) and Rpre, Rpost in XYZ;
  a mesh's vertices go to World(node) . G with G = Gt . Gr . Gs, and the
  node's children see World(node) without G.  World(node) is World(parent) . L
  for InheritType RSrs (1, the default); for RrSs (0) and Rrs (2) it is the
  FBX SDK's CalculateGlobalTransform (Node.world).  A skinned vertex at time t is
  World(bone, t) . TransformLink^-1 . World(mesh) . G . v, where TransformLink
  is the bone's world matrix at bind time.  (The FBX SDK hands out a
  cluster's Transform as the mesh's world matrix, but files store it
  relative to the bone, TransformLink^-1 . World(mesh), as Blender's exporter
  writes it and assimp reads it.)

  3MF: <model unit="..."> (default millimeter), Z up.  AMF: <amf unit="...">
  (default millimeter), Z up.  OpenGEX: Metric "distance" (metres per unit)
  and "up" ("z" by default).  Z up maps to canonical by (x, y, z) -> (x, z, -y).

Used by tests/integration/test_placement.py; run directly to write the files:
    python3 tests/integration/placement_models.py OUTDIR
"""

import math
import os
import sys
import zipfile

# ---- 4x4 matrices, column vectors (p' = M p), nested lists row by row ----


def ident():
    return [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]


def mul(*ms):
    r = ident()
    for m in ms:
        r = [[sum(r[i][k] * m[k][j] for k in range(4)) for j in range(4)] for i in range(4)]
    return r


def translate(v):
    m = ident()
    for i in range(3):
        m[i][3] = float(v[i])
    return m


def scaling(v):
    m = ident()
    for i in range(3):
        m[i][i] = float(v[i])
    return m


def rot_axis(axis, deg):
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m = ident()
    m[i][i], m[i][j], m[j][i], m[j][j] = c, -s, s, c
    return m


def euler_xyz(v):
    """FBX eEulerXYZ: rotate about X first, then Y, then Z."""
    return mul(rot_axis(2, v[2]), rot_axis(1, v[1]), rot_axis(0, v[0]))


def inverse(m):
    a = [list(map(float, row)) + [1.0 if i == j else 0.0 for j in range(4)] for i, row in enumerate(m)]
    for c in range(4):
        p = max(range(c, 4), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        d = a[c][c]
        a[c] = [x / d for x in a[c]]
        for r in range(4):
            if r != c and a[r][c]:
                f = a[r][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
    return [row[4:] for row in a]


def linear_of(m):
    return [[m[i][j] if i < 3 and j < 3 else float(i == j) for j in range(4)] for i in range(4)]


def rotation_of(m):
    """The rotation of an affine matrix: its columns made orthonormal (x, then
    y, then z), a mirror carried on x."""
    cols = []
    for j in range(3):
        c = [m[i][j] for i in range(3)]
        for k in cols:
            d = sum(a * b for a, b in zip(c, k))
            c = [a - d * b for a, b in zip(c, k)]
        n = math.sqrt(sum(a * a for a in c))
        cols.append([a / n for a in c])
    r = [[cols[j][i] for j in range(3)] + [0.0] for i in range(3)] + [[0.0, 0.0, 0.0, 1.0]]
    det = (r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
           + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]))
    if det < 0:
        for i in range(3):
            r[i][0] = -r[i][0]
    return r


def point(m, p):
    return tuple(sum(m[i][k] * p[k] for k in range(3)) + m[i][3] for i in range(3))


def box_of(points):
    pts = list(points)
    return (tuple(min(p[i] for p in pts) for i in range(3)),
            tuple(max(p[i] for p in pts) for i in range(3)))


def zup_to_canonical(p):
    return (p[0], p[2], -p[1])


# ---- a box mesh: 8 corners, 6 quads wound counter-clockwise from outside ----

BOX_QUADS = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]


def box_corners(lo, hi):
    """Corner i takes x from bit 0, y from bit 1, z from bit 2 of i."""
    return [(hi[0] if i & 1 else lo[0], hi[1] if i & 2 else lo[1], hi[2] if i & 4 else lo[2])
            for i in range(8)]


def cube(centre, half):
    return box_corners([c - half for c in centre], [c + half for c in centre])


# ---- FBX scene description -----------------------------------------------

FBX_SECOND = 46186158000  # FBX time units per second
FPS = 30                  # GlobalSettings TimeMode 6 = 30 frames per second

PROPS = {  # attribute -> (FBX property, default)
    "t": ("Lcl Translation", (0, 0, 0)),
    "r": ("Lcl Rotation", (0, 0, 0)),
    "s": ("Lcl Scaling", (1, 1, 1)),
    "pre": ("PreRotation", (0, 0, 0)),
    "post": ("PostRotation", (0, 0, 0)),
    "roff": ("RotationOffset", (0, 0, 0)),
    "rp": ("RotationPivot", (0, 0, 0)),
    "soff": ("ScalingOffset", (0, 0, 0)),
    "sp": ("ScalingPivot", (0, 0, 0)),
    "gt": ("GeometricTranslation", (0, 0, 0)),
    "gr": ("GeometricRotation", (0, 0, 0)),
    "gs": ("GeometricScaling", (1, 1, 1)),
}


class Node:
    """One FBX Model.  `mesh` is a list of 8 box corners (node-local), or a
    Node whose geometry this one instances.  `anim` maps an attribute of
    PROPS to [(frame, (x, y, z)), ...]."""

    def __init__(self, name, kind="Null", parent=None, mesh=None, anim=None, inherit=1, **props):
        self.name, self.kind, self.parent, self.mesh = name, kind, parent, mesh
        self.anim = anim or {}
        self.inherit = inherit  # InheritType: 0 RrSs, 1 RSrs, 2 Rrs
        self.props = {k: tuple(props.get(k, d)) for k, (_, d) in PROPS.items()}
        for k in props:
            if k not in PROPS:
                raise ValueError("unknown property %s" % k)

    def value(self, key, frame):
        keys = self.anim.get(key)
        if keys is None:
            return self.props[key]
        for f, v in keys:
            if f == frame:
                return v
        # between keys: the curves are linear (KeyAttrFlags 260), each
        # component (an Euler angle for rotations) on its own
        for (f0, v0), (f1, v1) in zip(keys, keys[1:]):
            if f0 < frame < f1:
                u = (frame - f0) / (f1 - f0)
                return tuple(a + (b - a) * u for a, b in zip(v0, v1))
        raise ValueError("%s.%s has no key at or around frame %s" % (self.name, key, frame))

    def local(self, frame=None):
        v = lambda k: self.props[k] if frame is None else self.value(k, frame)
        rp, sp = translate(v("rp")), translate(v("sp"))
        return mul(translate(v("t")), translate(v("roff")), rp, euler_xyz(v("pre")),
                   euler_xyz(v("r")), inverse(euler_xyz(v("post"))), inverse(rp),
                   translate(v("soff")), sp, scaling(v("s")), inverse(sp))

    def world(self, frame=None):
        l = self.local(frame)
        if self.parent is None:
            return l
        pw = self.parent.world(frame)
        if self.inherit == 1:  # RSrs: World(parent) . L
            return mul(pw, l)
        # The FBX SDK's CalculateGlobalTransform: GR, the rotation of the
        # parent's world matrix, and GS = GR^-1 . its linear part; LR =
        # Rpre . R . Rpost^-1, LS = S.  RrSs: GR . LR . GS . LS; Rrs: GR . LR .
        # GS . PLS^-1 . LS with PLS the parent's Lcl Scaling; the translation
        # is World(parent) applied to L's translation.
        v = lambda k: self.props[k] if frame is None else self.value(k, frame)
        gr = rotation_of(pw)
        gs = mul(inverse(gr), linear_of(pw))
        if self.inherit == 2:
            gs = mul(gs, inverse(scaling(self.parent.props["s"])))
        lr = mul(euler_xyz(v("pre")), euler_xyz(v("r")), inverse(euler_xyz(v("post"))))
        rs = mul(gr, lr, gs, scaling(v("s")))
        return mul(translate(point(pw, [l[i][3] for i in range(3)])), rs)

    def geometric(self):
        return mul(translate(self.props["gt"]), euler_xyz(self.props["gr"]),
                   scaling(self.props["gs"]))

    def corners(self):
        return self.mesh.mesh if isinstance(self.mesh, Node) else self.mesh


class Skin:
    """Every vertex of `mesh_node`'s mesh weighted 1 to `bone`."""

    def __init__(self, mesh_node, bone):
        self.mesh_node, self.bone = mesh_node, bone


class FbxModel:
    def __init__(self, name, nodes, skins=(), frames=None, doc=""):
        self.name, self.nodes, self.skins, self.frames, self.doc = name, nodes, list(skins), frames, doc

    # -- expected positions (the FBX rule) --

    def static_points(self):
        """Every mesh vertex at bind pose, world space (= canonical: the files
        are Y up with UnitScaleFactor 100)."""
        pts = []
        for n in self.nodes:
            if n.mesh is not None:
                m = mul(n.world(), n.geometric())
                pts += [point(m, p) for p in n.corners()]
        return pts

    def skinned_points(self, frame):
        pts = []
        for sk in self.skins:
            n = sk.mesh_node
            link = sk.bone.world()             # TransformLink
            m = mul(sk.bone.world(frame), inverse(link), n.world(), n.geometric())
            pts += [point(m, p) for p in n.corners()]
        return pts

    # -- the file --

    def fbx(self):
        ids = {}
        objects, conns = [], []

        def new_id():
            new_id.n += 1
            return new_id.n
        new_id.n = 100000

        for n in self.nodes:
            ids[n] = new_id()
        geo_ids = {}
        for n in self.nodes:
            p70 = []
            for key, (prop, default) in PROPS.items():
                val = n.props[key]
                if key in n.anim or tuple(val) != tuple(default):
                    if key in ("t", "r", "s"):
                        p70.append('P: "%s", "%s", "", "A%s",%s' % (prop, prop, "+" if key in n.anim else "",
                                                                     _nums(val)))
                    else:
                        p70.append('P: "%s", "Vector3D", "Vector", "",%s' % (prop, _nums(val)))
            if n.props["pre"] != (0, 0, 0) or n.props["post"] != (0, 0, 0):
                p70.append('P: "RotationActive", "bool", "", "",1')
            p70.append('P: "InheritType", "enum", "", "",%d' % n.inherit)
            kind = "Mesh" if n.mesh is not None else n.kind
            objects.append('Model: %d, "Model::%s", "%s" {\n\t\tVersion: 232\n\t\tProperties70:  {\n%s\n\t\t}\n'
                           '\t\tShading: T\n\t\tCulling: "CullingOff"\n\t}'
                           % (ids[n], n.name, kind, "\n".join("\t\t\t" + l for l in p70)))
            conns.append((ids[n], ids[n.parent] if n.parent else 0, None))
            if n.mesh is not None and not isinstance(n.mesh, Node):
                gid = new_id()
                geo_ids[n] = gid
                verts = [c for p in n.mesh for c in p]
                pvi = []
                for q in BOX_QUADS:
                    pvi += [q[0], q[1], q[2], -q[3] - 1]
                objects.append('Geometry: %d, "Geometry::%sMesh", "Mesh" {\n'
                               '\t\tVertices: *%d {\n\t\t\ta: %s\n\t\t}\n'
                               '\t\tPolygonVertexIndex: *%d {\n\t\t\ta: %s\n\t\t}\n'
                               '\t\tGeometryVersion: 124\n\t}'
                               % (gid, n.name, len(verts), _nums(verts), len(pvi), ",".join(map(str, pvi))))
        for n in self.nodes:
            if n.mesh is not None:
                conns.append((geo_ids[n.mesh if isinstance(n.mesh, Node) else n], ids[n], None))
        for sk in self.skins:
            skin_id, cl_id = new_id(), new_id()
            nv = len(sk.mesh_node.mesh)
            objects.append('Deformer: %d, "Deformer::%sSkin", "Skin" {\n\t\tVersion: 101\n'
                           '\t\tLink_DeformAcuracy: 50\n\t}' % (skin_id, sk.mesh_node.name))
            objects.append('Deformer: %d, "SubDeformer::%s", "Cluster" {\n\t\tVersion: 100\n'
                           '\t\tUserData: "", ""\n'
                           '\t\tIndexes: *%d {\n\t\t\ta: %s\n\t\t}\n'
                           '\t\tWeights: *%d {\n\t\t\ta: %s\n\t\t}\n'
                           '\t\tTransform: *16 {\n\t\t\ta: %s\n\t\t}\n'
                           '\t\tTransformLink: *16 {\n\t\t\ta: %s\n\t\t}\n\t}'
                           % (cl_id, sk.bone.name, nv, ",".join(map(str, range(nv))),
                              nv, ",".join(["1"] * nv),
                              _fbx_matrix(mul(inverse(sk.bone.world()), sk.mesh_node.world())),
                              _fbx_matrix(sk.bone.world())))
            conns.append((skin_id, geo_ids[sk.mesh_node], None))
            conns.append((cl_id, skin_id, None))
            conns.append((ids[sk.bone], cl_id, None))
        animated = [n for n in self.nodes if n.anim]
        if animated:
            stack, layer = new_id(), new_id()
            last = max(f for n in animated for keys in n.anim.values() for f, _ in keys)
            objects.append('AnimationStack: %d, "AnimStack::Take 001", "" {\n\t\tProperties70:  {\n'
                           '\t\t\tP: "LocalStop", "KTime", "Time", "",%d\n'
                           '\t\t\tP: "ReferenceStop", "KTime", "Time", "",%d\n\t\t}\n\t}'
                           % (stack, _ktime(last), _ktime(last)))
            objects.append('AnimationLayer: %d, "AnimLayer::BaseLayer", "" {\n\t}' % layer)
            conns.append((layer, stack, None))
            for n in animated:
                for key, keys in n.anim.items():
                    cn = new_id()
                    first = keys[0][1]
                    objects.append('AnimationCurveNode: %d, "AnimCurveNode::%s", "" {\n'
                                   '\t\tProperties70:  {\n'
                                   '\t\t\tP: "d|X", "Number", "", "A",%s\n'
                                   '\t\t\tP: "d|Y", "Number", "", "A",%s\n'
                                   '\t\t\tP: "d|Z", "Number", "", "A",%s\n\t\t}\n\t}'
                                   % (cn, key.upper(), _num(first[0]), _num(first[1]), _num(first[2])))
                    conns.append((cn, layer, None))
                    conns.append((cn, ids[n], PROPS[key][0]))
                    for axis in range(3):
                        cv = new_id()
                        objects.append('AnimationCurve: %d, "AnimCurve::", "" {\n\t\tDefault: 0\n'
                                       '\t\tKeyVer: 4009\n'
                                       '\t\tKeyTime: *%d {\n\t\t\ta: %s\n\t\t}\n'
                                       '\t\tKeyValueFloat: *%d {\n\t\t\ta: %s\n\t\t}\n'
                                       '\t\tKeyAttrFlags: *1 {\n\t\t\ta: 260\n\t\t}\n'
                                       '\t\tKeyAttrDataFloat: *4 {\n\t\t\ta: 0,0,0,0\n\t\t}\n'
                                       '\t\tKeyAttrRefCount: *1 {\n\t\t\ta: %d\n\t\t}\n\t}'
                                       % (cv, len(keys), ",".join(str(_ktime(f)) for f, _ in keys),
                                          len(keys), _nums(v[axis] for _, v in keys), len(keys)))
                        conns.append((cv, cn, "d|" + "XYZ"[axis]))
        out = ['; FBX 7.4.0 project file',
               '; written by meshfs tests/integration/placement_models.py: ' + self.doc,
               'FBXHeaderExtension:  {',
               '\tFBXHeaderVersion: 1003',
               '\tFBXVersion: 7400',
               '\tCreator: "meshfs placement_models.py"',
               '}',
               'GlobalSettings:  {',
               '\tVersion: 1000',
               '\tProperties70:  {',
               '\t\tP: "UpAxis", "int", "Integer", "",1',
               '\t\tP: "UpAxisSign", "int", "Integer", "",1',
               '\t\tP: "FrontAxis", "int", "Integer", "",2',
               '\t\tP: "FrontAxisSign", "int", "Integer", "",1',
               '\t\tP: "CoordAxis", "int", "Integer", "",0',
               '\t\tP: "CoordAxisSign", "int", "Integer", "",1',
               '\t\tP: "UnitScaleFactor", "double", "Number", "",100',
               '\t\tP: "TimeMode", "enum", "", "",6',
               '\t}',
               '}',
               'Objects:  {']
        out += ["\t" + o for o in objects]
        out += ['}', 'Connections:  {']
        for src, dst, prop in conns:
            if prop:
                out.append('\tC: "OP",%d,%d, "%s"' % (src, dst, prop))
            else:
                out.append('\tC: "OO",%d,%d' % (src, dst))
        out.append('}')
        return "\n".join(out) + "\n"


def _num(x):
    x = float(x)
    return str(int(x)) if x == int(x) else repr(x)


def _nums(xs):
    return ",".join(_num(x) for x in xs)


def _ktime(frame):
    return frame * FBX_SECOND // FPS


def _fbx_matrix(m):
    """FBX stores matrices with the translation in elements 12..14: the
    column-vector matrix column by column."""
    return _nums(m[i][j] for j in range(4) for i in range(4))


# ---- the FBX cases ---------------------------------------------------------

def bone_cube(bone):
    """A cube around a bone at bind pose, axis-aligned in the bone's own
    frame: then the box of its 8 corners moved by the bone is the box of the
    skinned cube itself (what .dem's per-frame bounds hold)."""
    return [point(bone.world(), p) for p in cube((0, 0, 0), 0.25)]


def fbx_models():
    models = []

    # PostRotation on a Null, child cube at (1, 0, 0): the child belongs at
    # Rz(-40) (1, 0, 0) = (0.766, -0.643, 0).
    parent = Node("Parent", post=(0, 0, 40))
    child = Node("Child", parent=parent, mesh=cube((0, 0, 0), 0.1), t=(1, 0, 0))
    models.append(FbxModel("post_rotation", [parent, child], doc="PostRotation 40 deg Z on a Null"))

    # PreRotation + RotationPivot (a Maya joint orient about a moved pivot).
    arm = Node("Arm", mesh=box_corners((0, -0.1, -0.1), (2, 0.1, 0.1)), t=(0.5, 0, 0),
               pre=(0, 0, 90), r=(0, 0, 30), rp=(1, 0, 0))
    hand = Node("Hand", parent=arm, mesh=cube((0, 0, 0), 0.1), t=(2, 0, 0))
    models.append(FbxModel("pre_rotation_pivot", [arm, hand], doc="PreRotation + RotationPivot"))

    # Scaling pivot and both offsets (a 3ds Max / Maya pivot edit).
    box = Node("Box", mesh=box_corners((0, 0, 0), (1, 1, 1)), t=(1, 0, 0), r=(0, 0, 90),
               s=(1.5, 1.5, 1.5), roff=(0, 0.5, 0), rp=(0.5, 0, 0), soff=(0, 0, 0.25),
               sp=(0.5, 0.5, 0.5))
    tip = Node("Tip", parent=box, mesh=cube((0, 0, 0), 0.05), t=(1, 1, 1))
    models.append(FbxModel("scaling_pivot_offsets", [box, tip], doc="ScalingPivot, RotationOffset, ScalingOffset"))

    # Geometric T/R/S on a parent with a child; the parent's geometry is also
    # instanced by a node without any geometric transform, which must not move.
    gparent = Node("GeoParent", mesh=cube((0, 0, 0), 0.5), gt=(0, 2, 0), gr=(0, 0, 90), gs=(2, 2, 2))
    gchild = Node("GeoChild", parent=gparent, mesh=cube((0, 0, 0), 0.1), t=(1, 0, 0))
    other = Node("Instance", mesh=gparent, t=(-3, 0, 0))
    models.append(FbxModel("geometric", [gparent, gchild, other],
                           doc="GeometricTranslation/Rotation/Scaling on a parent with a child"))

    # An animated joint with a PreRotation (joint orient): assimp gives it one
    # channel on the joint that already holds the PreRotation.  A skinned cube
    # follows the child joint.
    arm = Node("Arm", kind="LimbNode", t=(0, 1, 0), pre=(0, 0, 90),
               anim={"r": [(0, (0, 0, 0)), (10, (0, 0, 45))]})
    hand = Node("Hand", kind="LimbNode", parent=arm, t=(2, 0, 0))
    skin = Node("Skin", mesh=bone_cube(hand))
    models.append(FbxModel("anim_pre_rotation", [arm, hand, skin], skins=[Skin(skin, hand)],
                           frames=(0, 10), doc="animated joint with PreRotation"))

    # The same with a rotation pivot too: assimp then animates helper nodes
    # (Arm_$AssimpFbx$_Rotation) instead of the joint.
    arm = Node("Arm", kind="LimbNode", t=(0, 1, 0), pre=(0, 0, 90), rp=(1, 0, 0),
               anim={"r": [(0, (0, 0, 0)), (10, (0, 0, 60))]})
    hand = Node("Hand", kind="LimbNode", parent=arm, t=(2, 0, 0))
    skin = Node("Skin", mesh=bone_cube(hand))
    models.append(FbxModel("anim_pivot", [arm, hand, skin], skins=[Skin(skin, hand)],
                           frames=(0, 10), doc="animated joint with PreRotation and RotationPivot"))

    # A rotation pivot and a PostRotation on one animated joint, and a turn
    # past 90 degrees: the chain's product between keys is an arc about the
    # pivot (shared/research/fbx_transforms.md), which keys at 0 and 10 alone
    # would cut on the chord.
    arm = Node("Arm", kind="LimbNode", t=(0, 1, 0), post=(0, 0, 30), rp=(0.5, 0.25, 0),
               anim={"r": [(0, (0, 0, 0)), (10, (0, 0, 120))]})
    hand = Node("Hand", kind="LimbNode", parent=arm, t=(1.5, 0, 0))
    skin = Node("Skin", mesh=bone_cube(hand))
    models.append(FbxModel("anim_pivot_post_rotation", [arm, hand, skin], skins=[Skin(skin, hand)],
                           frames=(0, 10), doc="animated joint with RotationPivot and PostRotation"))

    # A skinned mesh under a joint with a PostRotation, animated.
    bone = Node("Bone", kind="LimbNode", t=(0, 0.5, 0), post=(0, 0, 30),
                anim={"r": [(0, (0, 0, 0)), (10, (0, 0, 45))]})
    btip = Node("BoneTip", kind="LimbNode", parent=bone, t=(1, 0, 0))
    skin = Node("Skin", mesh=bone_cube(btip))
    models.append(FbxModel("skin_post_rotation", [bone, btip, skin], skins=[Skin(skin, btip)],
                           frames=(0, 10), doc="skinned mesh under a joint with PostRotation"))

    # A skinned mesh whose own node has a geometric transform (a 3ds Max
    # pivot edit on a skinned object): the FBX SDK skins World . G . v.
    joint = Node("Joint", kind="LimbNode", t=(0, 1, 0),
                 anim={"r": [(0, (0, 0, 0)), (10, (0, 0, 30))]})
    skin = Node("Skin", gt=(0.5, 0, 0), gr=(0, 0, 90))
    skin.mesh = [point(inverse(skin.geometric()), p) for p in bone_cube(joint)]
    models.append(FbxModel("skin_geometric", [joint, skin], skins=[Skin(skin, joint)],
                           frames=(0, 10), doc="skinned mesh with a geometric transform"))
    # InheritType (FBX SDK: 0 RrSs, 1 RSrs, 2 Rrs; assimp 5.2.5 ignores it).
    # Rrs (Maya's segment scale compensate): a child turned 90 deg under a
    # parent scaled (2, 3, 1) keeps its own size; its child (RSrs) follows it.
    par = Node("Parent", s=(2, 3, 1), mesh=cube((0, 0, 0), 0.1))
    kid = Node("Kid", parent=par, inherit=2, t=(1, 0, 0), r=(0, 0, 90), mesh=box_corners((0, 0, 0), (1, 0.5, 0.25)))
    grand = Node("Grand", parent=kid, t=(1, 0, 0), mesh=cube((0, 0, 0), 0.1))
    models.append(FbxModel("inherit_rrs", [par, kid, grand], doc="InheritType Rrs under a scaled parent"))
    # RrSs: the parent's scale (2, 1, 1) applies along the child's own axes
    # after its 90 deg turn, so the child stretches along world y.
    par = Node("Parent", s=(2, 1, 1), r=(0, 0, 30), mesh=cube((0, 0, 0), 0.1))
    kid = Node("Kid", parent=par, inherit=0, t=(1, 0, 0), r=(0, 0, 90), mesh=box_corners((0, 0, 0), (1, 0.5, 0.25)))
    grand = Node("Grand", parent=kid, t=(1, 0, 0), mesh=cube((0, 0, 0), 0.1))
    models.append(FbxModel("inherit_rrss", [par, kid, grand], doc="InheritType RrSs under a scaled parent"))
    return models


# ---- declared units and up axes ------------------------------------------

# A box with a different extent on every axis, off the origin on every axis,
# in the file's own numbers (Z up).
UNIT_BOX = box_corners((1, 2, 3), (4, 8, 15))
UNIT_TRIS = [t for q in BOX_QUADS for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))]

UNITS_3MF = {"micron": 1e-6, "millimeter": 1e-3, "centimeter": 1e-2, "inch": 0.0254,
             "foot": 0.3048, "meter": 1.0}
UNITS_AMF = {"micron": 1e-6, "millimeter": 1e-3, "inch": 0.0254, "feet": 0.3048, "meter": 1.0}


class UnitModel:
    def __init__(self, name, data, metres, zup, doc):
        self.name, self.data, self.metres, self.zup, self.doc = name, data, metres, zup, doc

    def expected_box(self):
        pts = [tuple(c * self.metres for c in p) for p in UNIT_BOX]
        if self.zup:
            pts = [zup_to_canonical(p) for p in pts]
        return box_of(pts)


def threemf(unit):
    attr = ' unit="%s"' % unit if unit else ""
    verts = "".join('<vertex x="%s" y="%s" z="%s"/>' % tuple(_num(c) for c in p) for p in UNIT_BOX)
    tris = "".join('<triangle v1="%d" v2="%d" v3="%d"/>' % t for t in UNIT_TRIS)
    model = ('<?xml version="1.0" encoding="UTF-8"?>\n'
             '<model%s xml:lang="en-US" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02">\n'
             ' <resources>\n  <object id="1" name="Box" type="model">\n   <mesh>\n'
             '    <vertices>%s</vertices>\n    <triangles>%s</triangles>\n'
             '   </mesh>\n  </object>\n </resources>\n <build>\n  <item objectid="1"/>\n </build>\n'
             '</model>\n' % (attr, verts, tris))
    types = ('<?xml version="1.0" encoding="UTF-8"?>\n'
             '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
             '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
             '<Default Extension="model" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/>'
             '</Types>\n')
    rels = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Target="/3D/3dmodel.model" Id="rel0" '
            'Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/>'
            '</Relationships>\n')
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("[Content_Types].xml", types), ("_rels/.rels", rels),
                           ("3D/3dmodel.model", model)):
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
    return buf.getvalue()


def amf(unit):
    attr = ' unit="%s"' % unit if unit else ""
    verts = "\n".join('    <vertex><coordinates><x>%s</x><y>%s</y><z>%s</z></coordinates></vertex>'
                      % tuple(_num(c) for c in p) for p in UNIT_BOX)
    tris = "\n".join('    <triangle><v1>%d</v1><v2>%d</v2><v3>%d</v3></triangle>' % t for t in UNIT_TRIS)
    return ('<?xml version="1.0" encoding="utf-8"?>\n<amf%s version="1.1">\n <object id="0">\n'
            '  <mesh>\n   <vertices>\n%s\n   </vertices>\n   <volume>\n%s\n   </volume>\n  </mesh>\n'
            ' </object>\n</amf>\n' % (attr, verts, tris)).encode()


def ogex(distance, up):
    metrics = ""
    if distance is not None:
        metrics += 'Metric (key = "distance") {float {%s}}\n' % distance
    metrics += 'Metric (key = "angle") {float {1}}\n'
    if up is not None:
        metrics += 'Metric (key = "up") {string {"%s"}}\n' % up
    verts = ", ".join("{%s, %s, %s}" % tuple(_num(c) for c in p) for p in UNIT_BOX)
    tris = ", ".join("{%d, %d, %d}" % t for t in UNIT_TRIS)
    return (metrics +
            '// a comment with Metric (key = "distance") {float {1000}} that must not count\n'
            'GeometryNode $node1\n{\n\tName {string {"Box"}}\n\tObjectRef {ref {$geometry1}}\n'
            '\tTransform\n\t{\n\t\tfloat[16]\n\t\t{\n\t\t\t{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}\n'
            '\t\t}\n\t}\n}\n\n'
            'GeometryObject $geometry1\n{\n\tMesh (primitive = "triangles")\n\t{\n'
            '\t\tVertexArray (attrib = "position")\n\t\t{\n\t\t\tfloat[3]\n\t\t\t{\n\t\t\t\t%s\n'
            '\t\t\t}\n\t\t}\n\t\tIndexArray\n\t\t{\n\t\t\tunsigned_int32[3]\n\t\t\t{\n\t\t\t\t%s\n'
            '\t\t\t}\n\t\t}\n\t}\n}\n' % (verts, tris)).encode()


def unit_models():
    return [
        UnitModel("3mf_mm.3mf", threemf("millimeter"), 1e-3, True, "3MF, unit millimeter"),
        UnitModel("3mf_default.3mf", threemf(None), 1e-3, True, "3MF without unit (millimetres)"),
        UnitModel("3mf_inch.3mf", threemf("inch"), 0.0254, True, "3MF, unit inch"),
        UnitModel("amf_inch.amf", amf("inch"), 0.0254, True, "AMF, unit inch"),
        UnitModel("amf_default.amf", amf(None), 1e-3, True, "AMF without unit (millimetres)"),
        UnitModel("ogex_cm_zup.ogex", ogex("0.01", "z"), 0.01, True, "OpenGEX, distance 0.01, up z"),
        UnitModel("ogex_m_yup.ogex", ogex("1.0", "y"), 1.0, False, "OpenGEX, distance 1, up y"),
        UnitModel("ogex_default.ogex", ogex(None, None), 1.0, True, "OpenGEX without metrics (metres, z up)"),
    ]


def write_all(outdir):
    """Writes every model into outdir; returns {file name: model}."""
    os.makedirs(outdir, exist_ok=True)
    written = {}
    for m in fbx_models():
        name = m.name + ".fbx"
        with open(os.path.join(outdir, name), "w") as f:
            f.write(m.fbx())
        written[name] = m
    for m in unit_models():
        with open(os.path.join(outdir, m.name), "wb") as f:
            f.write(m.data)
        written[m.name] = m
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: placement_models.py OUTDIR")
    for name in sorted(write_all(sys.argv[1])):
        print(name)

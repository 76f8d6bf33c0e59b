"""Files as artists ship them (issue 34), each built here byte by byte.

- Quake 2 models whose frames end exactly at the end of the file (item 3):
  MD2 files without GL commands, which id's loaders never read and many
  exporters leave out.  assimp's MD2 importer refuses them ("some offsets
  are outside the file", a >= where > is meant); meshfs shows the parser
  one zero byte past the end (src/import/iofs.c, docs/import.md), so they
  convert, and give the same views as the same model with a GL command
  list after its frames (the layout of id's qfiles.h).
- A Doom 3 model whose material name is Latin-1, as 3ds Max wrote it
  (item 4): every view passes its own --check, the name reads as
  "01 - Par d\u00e9faut" in UTF-8, and the report says so.
- Files whose geometry parses but that assimp's structure check refuses
  (item 2): an AC3D scene with two lights of one name, an OBJ with an "f"
  line of two corners, a B3D whose keys run one frame past its animation's
  duration, a DirectX mesh whose bone's weights are split over two
  SkinWeights blocks.  Each converts, with both importer settings, every view passes
  --check, and each repair is said in the views' note.
- An Inter-Quake Model that holds a skeleton and an animation and no mesh,
  and a Quake III MD3 of tags only (item 7), as exporters and games ship
  them: neither has views, in a
  mount and from meshfs-convert, and that is no failure; geometry written
  into the same file brings its views back, without a remount."""
import json
import os
import errno
import shutil
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TreeCase, run, run_tests, tool  # noqa: E402
from mount import Mount  # noqa: E402


def md2(glcmds, skins=1):
    """A tetrahedron: 4 vertices, 4 triangles, 1 skin (or none), 1 frame;
    with glcmds, a GL command list of one terminator after the frame."""
    nv, nst, ntri = 4, 3, 4
    framesize = 40 + 4 * nv
    ofs_skins = 68
    ofs_st = ofs_skins + 64
    ofs_tris = ofs_st + 4 * nst
    ofs_frames = ofs_tris + 12 * ntri
    ofs_gl = ofs_frames + framesize
    gl = struct.pack("<i", 0) if glcmds else b""
    skin = b"tet.png".ljust(64, b"\0") if skins else b""
    ofs_st, ofs_tris, ofs_frames, ofs_gl = (o - 64 + len(skin) for o in (ofs_st, ofs_tris, ofs_frames, ofs_gl))
    hdr = struct.pack("<4s16i", b"IDP2", 8, 64, 64, framesize, skins, nv, nst, ntri, len(gl) // 4, 1,
                      ofs_skins, ofs_st, ofs_tris, ofs_frames, ofs_gl, ofs_gl + len(gl))
    st = struct.pack("<6h", 0, 0, 64, 0, 0, 64)
    tris = b"".join(struct.pack("<6h", *t, 0, 1, 2) for t in ((0, 1, 2), (0, 3, 1), (1, 3, 2), (2, 3, 0)))
    # position = byte * scale + translate: (-1,-2,0), (99,-2,0), (-1,98,0), (-1,-2,100)
    frame = struct.pack("<6f", 0.5, 0.5, 0.5, -1, -2, 0) + b"stand01".ljust(16, b"\0")
    frame += bytes([0, 0, 0, 0, 200, 0, 0, 0, 0, 200, 0, 0, 0, 0, 200, 0])
    return hdr + skin + st + tris + frame + gl


class Md2AtEndOfFile(TreeCase):
    def test_frames_ending_at_the_end_of_the_file_convert(self):
        for sub, gl in (("bare", False), ("gl", True)):
            os.makedirs(os.path.join(self.src, sub))
            data = md2(gl)
            with open(os.path.join(self.src, sub, "tet.md2"), "wb") as f:
                f.write(data)
            # the layout as built: frames end at the end of the file, or 4
            # bytes before it
            ofs_frames, ofs_end = struct.unpack_from("<i", data, 4 + 4 * 13)[0], len(data)
            self.assertEqual(ofs_frames + 56, ofs_end - (4 if gl else 0))
        for sub in ("bare", "gl"):
            out = os.path.join(self.tmp, "out-" + sub)
            p = run([tool("meshfs-convert"), "--no-cache", "-o", out, os.path.join(self.src, sub)])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("1 converted, 0 up to date, 0 failed", p.stderr)
        names = sorted(os.listdir(os.path.join(self.tmp, "out-bare")))
        self.assertEqual(names, ["game_resources.lgepkg", "tet.dem", "tet.fmd", "tet.fmi", "tet.gmf",
                                 "tet.sph", "tet.tex", "tet.tri", "tet.vrt"])
        for n in names:
            if n == "tet.fmi":
                continue  # names the model's folder, which differs
            with open(os.path.join(self.tmp, "out-bare", n), "rb") as a, \
                    open(os.path.join(self.tmp, "out-gl", n), "rb") as b:
                self.assertEqual(a.read(), b.read(), n)
        views = [os.path.join(self.tmp, "out-bare", n) for n in names]
        p = run([tool("meshfs-inspect"), "--check", "--json"] + views)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        fmd = next(json.loads(line) for line in p.stdout.splitlines() if '"format":"fmd"' in line)
        self.assertEqual((fmd["triangles"], fmd["vertices"]), (4, 12))
        self.assertEqual((fmd["min"], fmd["max"]), ([-1, -2, 0], [99, 98, 100]))


    def test_a_model_without_skins_names_no_texture(self):
        """assimp names a placeholder, "$texture_dummy.bmp", where an MD2
        has no skin: no file the model names, so no warning of it missing
        and no trace of it in the views."""
        os.makedirs(self.src)
        with open(os.path.join(self.src, "tet.md2"), "wb") as f:
            f.write(md2(False, skins=0))
        out = os.path.join(self.tmp, "out")
        p = run([tool("meshfs-convert"), "--no-cache", "-o", out, self.src])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("warning", p.stderr)
        for n in os.listdir(out):
            with open(os.path.join(out, n), "rb") as f:
                self.assertNotIn(b"texture_dummy", f.read(), n)
        with open(os.path.join(out, "tet.gmf"), "rb") as f:
            self.assertIn(b"DefaultMaterial.mat", f.read())


MD5 = (b'MD5Version 10\ncommandline ""\n\nnumJoints 1\nnumMeshes 1\n\njoints {\n'
       b'\t"origin"\t-1 ( 0 0 0 ) ( 0 0 0 )\n}\n\nmesh {\n\tshader "01 - Par d\xe9faut"\n'
       b'\tnumverts 3\n\tvert 0 ( 0 0 ) 0 1\n\tvert 1 ( 1 0 ) 1 1\n\tvert 2 ( 0 1 ) 2 1\n'
       b'\tnumtris 1\n\ttri 0 0 1 2\n\tnumweights 3\n\tweight 0 0 1.0 ( 0 0 0 )\n'
       b'\tweight 1 0 1.0 ( 1 0 0 )\n\tweight 2 0 1.0 ( 0 1 0 )\n}\n')


class Latin1Names(TreeCase):
    def test_a_latin1_material_name_makes_valid_views(self):
        os.makedirs(self.src)
        with open(os.path.join(self.src, "guy.md5mesh"), "wb") as f:
            f.write(MD5)
        out, report = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "r.json")
        # stderr names the texture file the model looked for by its bytes
        # on disk, which are Latin-1: read as bytes
        p = subprocess.run([tool("meshfs-convert"), "--no-cache", "--report", report, "-o", out,
                            self.src], capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"referenced file '01 - Par d\xe9faut_d.tga' is missing", p.stderr)
        stderr = p.stderr
        views = sorted(os.path.join(out, n) for n in os.listdir(out))
        self.assertEqual(len(views), 9)
        p = run([tool("meshfs-inspect"), "--check"] + views)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(out, "guy.fmi"), "rb") as f:
            fmi = f.read()
        self.assertEqual(fmi, "model=guy\n01 - Par d\u00e9faut.msh=UNKNOWN\n".encode())
        with open(report) as f:
            row = next(r for r in map(json.loads, f) if r.get("model") == "guy.md5mesh")
        said = "5 names made UTF-8 (read as Latin-1, or a leading byte-order mark dropped; the " \
               "first: '01 - Par d\u00e9faut.msh')"
        self.assertEqual(row["warnings"], ["referenced file 'guy.md5anim' is missing",
                                           "referenced file '01 - Par d\ufffdfaut_d.tga' is missing", said])
        self.assertIn(("meshfs-convert: warning: %s: %s\n" % (os.path.join(self.src, "guy.md5mesh"),
                                                              said)).encode(), stderr)


AC_LAMPS = ('AC3Db\nMATERIAL "" rgb 1 1 1  amb 0.2 0.2 0.2  emis 0 0 0  spec 0.5 0.5 0.5  shi 10  trans 0\n'
            'OBJECT world\nkids 3\nOBJECT light\nname "lamp"\nloc 0 1 0\nkids 0\nOBJECT light\n'
            'name "lamp"\nloc 0 2 0\nkids 0\nOBJECT poly\nname "tri"\nnumvert 3\n0 0 0\n1 0 0\n0 1 0\n'
            'numsurf 1\nSURF 0x10\nmat 0\nrefs 3\n0 0 0\n1 0 0\n2 0 0\nkids 0\n')
OBJ_LINE = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 4\n"


def b3d(last_frame):
    """Blitz3D: a root node with a triangle, an animation of 10 frames
    (ANIM), and a joint whose position keys run to last_frame (KEYS)."""
    def chunk(tag, body):
        return tag + struct.pack("<i", len(body)) + body
    verts = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
    vrts = struct.pack("<3i", 0, 0, 0) + b"".join(struct.pack("<3f", *v) for v in verts)
    tris = struct.pack("<i", -1) + struct.pack("<3i", 0, 1, 2)
    mesh = chunk(b"MESH", struct.pack("<i", -1) + chunk(b"VRTS", vrts) + chunk(b"TRIS", tris))
    bone = chunk(b"BONE", b"".join(struct.pack("<if", i, 1.0) for i in range(3)))
    keys = chunk(b"KEYS", struct.pack("<i", 1) + b"".join(
        struct.pack("<i3f", f, 0.1 * f, 0, 0) for f in range(1, last_frame + 1)))
    rest = struct.pack("<3f3f4f", 0, 0, 0, 1, 1, 1, 1, 0, 0, 0)
    joint = chunk(b"NODE", b"joint\0" + rest + bone + keys)
    anim = chunk(b"ANIM", struct.pack("<iif", 0, 10, 30.0))
    return chunk(b"BB3D", struct.pack("<i", 1) + chunk(b"NODE", b"root\0" + rest + mesh + anim + joint))


# A DirectX mesh whose skin names one frame in two SkinWeights blocks (the
# file format's templates allow it, and some exporters split a bone's
# weights so): vertices 0 and 1 in the first, vertex 2 in the second, each
# with the same offset matrix.  assimp's structure check refuses two bones
# of one name in a mesh.
IDENTITY = "1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0;;"
X_SPLIT_SKIN = """xof 0303txt 0032
Frame Root {
 FrameTransformMatrix { %(m)s }
 Frame Bone1 {
  FrameTransformMatrix { %(m)s }
 }
 Mesh tri {
  3;
  0.0;0.0;0.0;,
  1.0;0.0;0.0;,
  0.0;1.0;0.0;;
  1;
  3;0,1,2;;
  XSkinMeshHeader { 1; 1; 2; }
  SkinWeights { "Bone1"; 2; 0,1; 1.0,1.0; %(m)s }
  SkinWeights { "Bone1"; 1; 2; 1.0; %(m)s }
 }
}
""" % {"m": IDENTITY}


class Tolerant(TreeCase):
    def test_files_assimps_check_refuses_convert(self):
        os.makedirs(self.src)
        for name, data in (("lamps.ac", AC_LAMPS.encode()), ("lines.obj", OBJ_LINE.encode()),
                           ("past.b3d", b3d(11)), ("fits.b3d", b3d(10)),
                           ("split.x", X_SPLIT_SKIN.encode())):
            with open(os.path.join(self.src, name), "wb") as f:
                f.write(data)
        for importer in ("auto", "assimp"):
            out, report = os.path.join(self.tmp, "out-" + importer), os.path.join(self.tmp, importer + ".json")
            p = run([tool("meshfs-convert"), "--no-cache", "--importer", importer, "--report", report,
                     "-o", out, self.src])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("5 converted, 0 up to date, 0 failed", p.stderr)
            self.assertIn("meshfs-convert: warning: %s: assimp's structure check refused it"
                          % os.path.join(self.src, "lamps.ac"), p.stderr)
            views = sorted(os.path.join(out, n) for n in os.listdir(out))
            self.assertEqual(len(views), 5 * 8 + 1)
            p = run([tool("meshfs-inspect"), "--check"] + views)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(report) as f:
                said = {r["model"]: r["warnings"] for r in map(json.loads, f) if "model" in r}
            self.assertEqual(said["lamps.ac"], ["assimp's structure check refused it (Validation failed: "
                             "aiScene::mLights[0] has the same name as aiScene::mNumLights[1]): read "
                             "without that check"])
            self.assertEqual(said["lines.obj"], ["assimp's structure check refused it (Validation "
                             "failed: aiMesh::mFaces[1] is a LINE but aiMesh::mPrimitiveTypes does not "
                             "report the LINE flag): read without that check; mesh 'defaultobject': 1 "
                             "face of fewer than 3 corners dropped"])
            self.assertEqual(len(said["past.b3d"]), 1)
            self.assertIn("is larger than aiAnimation::mDuration (which is 10.00000)): read without that "
                          "check; animation '': keys run to 11 ticks, past its duration of 10: the "
                          "duration extended", said["past.b3d"][0])
            self.assertEqual(said["fits.b3d"], [])
            self.assertEqual(said["split.x"], ["assimp's structure check refused it (Validation failed: "
                             "aiMesh::mBones[0], name = \"Bone1\" has the same name as aiMesh::mBones[1]): "
                             "read without that check; mesh 'Root': 2 bones named 'Bone1' merged into one"])
            # one bone, every vertex on it with weight 1: the .dem's
            # "w WEIGHT JOINT FACTOR X Y Z" lines (research/dem_vrt.md), one a vertex
            with open(os.path.join(out, "split.dem")) as f:
                lines = f.read().splitlines()
            self.assertIn("joints 2", lines)
            self.assertIn("j Bone1 0 0.0 0.0 0.0 0.0 0.0 0.0", lines)
            self.assertIn("weights 3", lines)
            self.assertEqual(sorted(tuple(l.split()[1:4]) for l in lines if l.startswith("w ")),
                             [("0", "1", "1.0"), ("1", "1", "1.0"), ("2", "1", "1.0")])

            # the triangle kept, the line gone
            p = run([tool("meshfs-inspect"), "--json", os.path.join(out, "lines.fmd")])
            self.assertEqual(json.loads(p.stdout)["triangles"], 1)
            # every frame the file holds is played: ticks 0..11 at 30 fps
            # is one frame more than 0..10
            frames = {}
            for m in ("past", "fits"):
                with open(os.path.join(out, m + ".dem")) as f:
                    frames[m] = [line for line in f.read().splitlines() if line.startswith("frames ")]
            self.assertEqual(frames, {"past": ["frames 12"], "fits": ["frames 11"]})


def iqm(mesh, anim=True):
    """An IQM version 2 file, laid out as the format's iqm.h: a header of
    27 little-endian words after the magic, then each section at its
    offset.  With mesh, one triangle (positions only); with anim, one joint,
    its pose and a two-frame animation "idle" of three channels."""
    text = b"\0root\0idle\0tri\0"
    sections = []
    at = 16 + 27 * 4

    def put(data):
        nonlocal at
        sections.append(data)
        where, at = at, at + len(data)
        return where

    ofs_text = put(text)
    n_mesh = n_va = n_vert = n_tri = 0
    ofs_mesh = ofs_va = ofs_tri = 0
    if mesh:
        pos = put(struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0))
        ofs_tri = put(struct.pack("<3I", 0, 1, 2))
        ofs_va = put(struct.pack("<5I", 0, 0, 7, 3, pos))  # IQM_POSITION, IQM_FLOAT, 3
        ofs_mesh = put(struct.pack("<6I", 11, 0, 0, 3, 0, 1))
        n_mesh, n_va, n_vert, n_tri = 1, 1, 3, 1
    n_joint = n_pose = n_anim = n_frame = n_chan = 0
    ofs_joint = ofs_pose = ofs_anim = ofs_frame = 0
    if anim:
        ofs_joint = put(struct.pack("<Ii10f", 1, -1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1))
        # translation x, y, z animated (mask 7): offset 0, scale 1; the rest fixed
        ofs_pose = put(struct.pack("<iI20f", -1, 7, *([0.0] * 6 + [1.0] + [1.0] * 3),
                                   *([1.0] * 3 + [0.0] * 7)))
        ofs_anim = put(struct.pack("<IIIfI", 6, 0, 2, 30.0, 0))
        ofs_frame = put(struct.pack("<6H", 0, 0, 0, 1, 1, 1))
        n_joint, n_pose, n_anim, n_frame, n_chan = 1, 1, 1, 2, 3
    header = struct.pack("<27I", 2, at, 0, len(text), ofs_text, n_mesh, ofs_mesh, n_va, n_vert,
                         ofs_va, n_tri, ofs_tri, 0, n_joint, ofs_joint, n_pose, ofs_pose, n_anim,
                         ofs_anim, n_frame, n_chan, ofs_frame, 0, 0, 0, 0, 0)
    return b"INTERQUAKEMODEL\0" + header + b"".join(sections)


def md3_tags():
    """A Quake III MD3 of one frame and one tag and no surface (id's
    qfiles.h layout: the header, then frames of 56 bytes, tags of 112)."""
    frame = struct.pack("<10f", -1, -1, -1, 1, 1, 1, 0, 0, 0, 1.7) + b"frame0".ljust(16, b"\0")
    tag = b"tag_weapon".ljust(64, b"\0") + struct.pack("<12f", 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1)
    ofs_frames = 4 + 4 + 64 + 4 * 9
    ofs_tags = ofs_frames + len(frame)
    end = ofs_tags + len(tag)
    return (b"IDP3" + struct.pack("<i", 15) + b"tags".ljust(64, b"\0")
            + struct.pack("<9i", 0, 1, 1, 0, 0, ofs_frames, ofs_tags, end, end) + frame + tag)


class NoGeometry(TreeCase):
    VIEWS = ("fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex")

    def write(self, name, data):
        with open(os.path.join(self.src, name), "wb") as f:
            f.write(data)

    def test_an_animation_only_file_has_no_views_and_is_no_failure(self):
        os.makedirs(self.src)
        self.write("walk.iqm", iqm(mesh=False))
        self.write("prop.iqm", iqm(mesh=True, anim=False))
        self.write("tags.md3", md3_tags())
        out, report = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "r.json")
        walk = os.path.join(self.src, "walk.iqm")
        for state, counts in (("converted", "1 converted, 0 up to date, 0 failed, 2 without meshes"),
                              ("up to date", "0 converted, 1 up to date, 0 failed, 2 without meshes")):
            p = run([tool("meshfs-convert"), "--cache-dir", self.cache, "--report", report, "-o", out,
                     self.src])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no views %s: no meshes in the scene\n" % walk, p.stdout)
            self.assertIn("no views %s: no meshes in the scene\n" % os.path.join(self.src, "tags.md3"),
                          p.stdout)
            self.assertIn("meshfs-convert: " + counts + "\n", p.stderr)
            self.assertNotIn("FAILED", p.stdout)
            self.assertEqual(sorted(os.listdir(out)),
                             sorted(["game_resources.lgepkg"] + ["prop." + v for v in self.VIEWS]))
            with open(report) as f:
                rows = {r["model"]: r for r in map(json.loads, f) if "model" in r}
            for m in ("walk.iqm", "tags.md3"):
                self.assertEqual((rows[m]["state"], rows[m]["ok"], rows[m]["error"]),
                                 ("no mesh", False, "no meshes in the scene"))
            self.assertEqual(rows["prop.iqm"]["state"], state)
        # the package holds the one model with geometry
        p = run([tool("meshfs-inspect"), "--json", os.path.join(out, "game_resources.lgepkg")])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((json.loads(p.stdout)["meshes"], json.loads(p.stdout)["triangles"]), (1, 1))
        p = run([tool("meshfs-cache"), "--cache-dir", self.cache, "warm", self.src])
        self.assertEqual((p.returncode, p.stdout), (0, "warm: 0 converted, 1 up to date, 0 failed, "
                                                       "2 without meshes\n"), p.stderr)
        self.assertEqual(p.stderr, "")

        # geometry written into the same file: its views, as any model's
        self.write("walk.iqm", iqm(mesh=True))
        p = run([tool("meshfs-convert"), "--cache-dir", self.cache, "-o", out, self.src])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ok %s\n" % walk, p.stdout)
        self.assertIn("meshfs-convert: 1 converted, 1 up to date, 0 failed, 1 without meshes\n",
                      p.stderr)
        p = run([tool("meshfs-inspect"), "--check"] + [os.path.join(out, "walk." + v) for v in self.VIEWS])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_a_mount_shows_no_views_of_a_file_without_meshes(self):
        os.makedirs(self.src)
        self.write("walk.iqm", iqm(mesh=False))
        self.write("prop.iqm", iqm(mesh=True, anim=False))
        shown = lambda: sorted(n for n in os.listdir(self.mnt) if n.startswith("walk"))
        all_views = sorted(["walk.iqm"] + ["walk." + v for v in self.VIEWS])
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1") as mnt:
            # not converted yet: nothing says it has no mesh
            self.assertEqual(shown(), all_views)
            with self.assertRaises(OSError) as e:
                os.stat(os.path.join(self.mnt, "walk.gmf"))
            self.assertEqual(e.exception.errno, errno.ENOENT)
            self.assertEqual(shown(), ["walk.iqm"])
            for v in self.VIEWS:
                with self.assertRaises(FileNotFoundError):
                    open(os.path.join(self.mnt, "walk." + v), "rb")
            # the reason stays readable on the model itself
            said = os.getxattr(os.path.join(self.mnt, "walk.iqm"), "user.meshfs.error").decode()
            self.assertEqual(said, "".join("walk.%s: no meshes in the scene\n" % v for v in self.VIEWS))
            # the folder's package is the other model's
            pkg = os.path.join(self.mnt, "game_resources.lgepkg")
            p = run([tool("meshfs-inspect"), "--check", pkg])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

            # geometry saved into the file: its views are back, no remount
            self.write("walk.iqm", iqm(mesh=True))
            time.sleep(1.3)
            with open(os.path.join(self.mnt, "walk.gmf"), "rb") as f:
                self.assertGreater(len(f.read()), 100)
            self.assertEqual(shown(), all_views)
            # and gone again with it
            self.write("walk.iqm", iqm(mesh=False))
            time.sleep(2.2)  # past the timeouts, and settled (its hash then kept: cache.md)
            with self.assertRaises(FileNotFoundError):
                open(os.path.join(self.mnt, "walk.dem"), "rb")
            self.assertEqual(shown(), ["walk.iqm"])
            self.assertTrue(mnt.alive())
        # a fresh mount over the cache: a listing with attributes already
        # knows (ls -l, find -ls)
        with Mount(self.src, self.mnt, self.cache, "attr_timeout=1", "entry_timeout=1"):
            listed = sorted(e.name for e in os.scandir(self.mnt) if e.name.startswith("walk"))
            self.assertEqual(listed, ["walk.iqm"])

if __name__ == "__main__":
    run_tests()

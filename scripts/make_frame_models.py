"""Builds the frame test scene in Blender and exports it in every variant.

Run by scripts/make-frame-models (blender -b --factory-startup --python ...).
Every variant holds the SAME physical scene; only the way the file declares
its axes and units differs.  tests/integration/test_frame.py checks that
meshfs brings each of them to the same canonical-frame geometry, and
tests/data/frame/README.md lists the variants and the expected box.

The scene (Blender coordinates: right-handed, Z up, -Y "front", metres):
  Tower   a 1 x 2 x 4 box (local x in [-0.5,0.5], y in [-1,1], z in [0,4]),
          placed at (3, 0, 0) and turned 90 degrees about Z, so in the world
          it is 2 m along X, 1 m along Y, 4 m tall, base on the ground.
  Marker  a 0.5 m cube, child of Tower at local (2, 0, 1); the parent's turn
          carries local +X onto world +Y, so it sits at world (3, 2, 1).
          An importer that drops the parent's rotation puts it at (5, 0, 1).
World box: x [2, 4], y [-0.5, 2.25], z [0, 4]; canonical (x, z, -y):
  cmin (2, 0, -2.25), cmax (4, 4, 0.5).  Each axis has a different extent
  and none is symmetric about 0, so any swapped axis, flipped sign or wrong
  scale changes the box.
"""

import datetime
import math
import os
import re
import sys
import types

import bpy
from mathutils import Matrix

# Quads wound counter-clockwise seen from outside; vertex i has x from bit 0,
# y from bit 1, z from bit 2 of i.
BOX_FACES = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4),
             (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]

FIXED_TIME = datetime.datetime(2000, 1, 1, 0, 0, 0)


def box_mesh(name, lo, hi):
    verts = [(hi[0] if i & 1 else lo[0], hi[1] if i & 2 else lo[1], hi[2] if i & 4 else lo[2])
             for i in range(8)]
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts, [], BOX_FACES)
    me.update()
    return me


def build_scene(k):
    """Empties the file and builds the scene with every length times k (so
    k=100 with scale_length 0.01 is the same scene modelled in centimetres)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.unit_settings.system = 'METRIC'
    scene.unit_settings.scale_length = 1.0 / k
    tower = bpy.data.objects.new(
        "Tower", box_mesh("TowerMesh", (-0.5 * k, -1.0 * k, 0.0), (0.5 * k, 1.0 * k, 4.0 * k)))
    tower.location = (3.0 * k, 0.0, 0.0)
    tower.rotation_euler = (0.0, 0.0, math.radians(90.0))
    marker = bpy.data.objects.new(
        "Marker", box_mesh("MarkerMesh", (-0.25 * k,) * 3, (0.25 * k,) * 3))
    marker.location = (2.0 * k, 0.0, 1.0 * k)
    scene.collection.objects.link(tower)
    scene.collection.objects.link(marker)
    marker.parent = tower
    marker.matrix_parent_inverse = Matrix.Identity(4)
    bpy.context.view_layer.update()


def pin_fbx_nondeterminism():
    """Blender stamps the export time into the FBX header and derives object
    ids from Python's per-process randomised hash(); a fixed stamp and a
    content hash keep regenerated files byte-identical."""
    import hashlib
    import io_scene_fbx.export_fbx_bin as fbx_bin
    import io_scene_fbx.fbx_utils as fbx_utils

    def key_to_uuid(uuids, key):
        # Same contract as fbx_utils._key_to_uuid: a fresh id below 2**63.
        if isinstance(key, int) and 0 <= key < 2**63:
            uuid = key
        else:
            uuid = int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:8], "little") >> 1
        while uuid in uuids:
            uuid = (uuid + 1) % 2**63
        return uuid

    fbx_utils._key_to_uuid = key_to_uuid

    class FixedDateTime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return FIXED_TIME

    fbx_bin.datetime = types.SimpleNamespace(datetime=FixedDateTime)


def fbx(out, name, **kw):
    bpy.ops.export_scene.fbx(filepath=os.path.join(out, name), **kw)


def edit_text(path, edits):
    """Applies (old, new) replacements, each of which must match exactly once,
    so a Blender update that changes the text fails loudly here."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for old, new in edits:
        if text.count(old) != 1:
            sys.exit("make_frame_models: %s: expected one '%s', found %d"
                     % (path, old, text.count(old)))
        text = text.replace(old, new)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def pin_dae_time(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stamp = FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%S")
    text = re.sub(r"<created>[^<]*</created>", "<created>%s</created>" % stamp, text)
    text = re.sub(r"<modified>[^<]*</modified>", "<modified>%s</modified>" % stamp, text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def dae(out, name, **kw):
    path = os.path.join(out, name)
    bpy.ops.wm.collada_export(filepath=path, **kw)
    pin_dae_time(path)
    return path


def export_metre_scene(out):
    build_scene(1.0)
    pin_fbx_nondeterminism()
    # FBX: defaults, then one setting changed at a time (see README.md).
    fbx(out, "box_fbx_default.fbx")
    fbx(out, "box_fbx_zup.fbx", axis_up='Z', axis_forward='Y')
    fbx(out, "box_fbx_xdown.fbx", axis_up='-X', axis_forward='Z')
    fbx(out, "box_fbx_bake.fbx", bake_space_transform=True)
    fbx(out, "box_fbx_scale_all.fbx", apply_scale_options='FBX_SCALE_ALL')
    fbx(out, "box_fbx_zup_scale_all.fbx", axis_up='Z', axis_forward='Y',
        apply_scale_options='FBX_SCALE_ALL')
    # glTF: always Y up, metres.
    bpy.ops.export_scene.gltf(filepath=os.path.join(out, "box_glb.glb"), export_format='GLB')
    bpy.ops.export_scene.gltf(filepath=os.path.join(out, "box_gltf.gltf"),
                              export_format='GLTF_SEPARATE')
    # Collada as Blender writes it: Z_UP, meter 1.
    dae(out, "box_dae_default.dae")
    # Blender's "apply global orientation" bakes the Y-up conversion into the
    # data but still writes <up_axis>Z_UP</up_axis>; the one edit below makes
    # the header tell the truth, giving a genuine Y_UP file.
    path = dae(out, "box_dae_yup.dae", apply_global_orientation=True,
               export_global_up_selection='Y', export_global_forward_selection='-Z')
    edit_text(path, [("<up_axis>Z_UP</up_axis>", "<up_axis>Y_UP</up_axis>")])
    # OBJ: reference only (no axis or unit declaration in the format).
    bpy.ops.wm.obj_export(filepath=os.path.join(out, "box_obj_reference.obj"),
                          export_materials=False, export_uv=False)


def export_centimetre_scene(out):
    # Same scene modelled in centimetres: Blender writes <unit meter="0.01">
    # from the scene's unit scale, no edit needed.
    build_scene(100.0)
    dae(out, "box_dae_cm.dae")


def main():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if len(argv) != 1:
        sys.exit("usage: blender -b --factory-startup --python make_frame_models.py -- OUTDIR")
    out = os.path.abspath(argv[0])
    os.makedirs(out, exist_ok=True)
    export_metre_scene(out)
    export_centimetre_scene(out)


main()

"""Small glTF 2.0 files built by the spec, for the tests that read their
motion back out of the views (test_node_anim, test_native).

One embedded buffer (a base64 data URI), each accessor in its own
4-byte-aligned buffer view, one animation of all the tracks added."""

import base64
import json
import struct

# the 12 triangles of a box of 8 corners in box() order (outward, CCW)
BOX_TRIS = [0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
            2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5]

FLOAT, UBYTE, USHORT = 5126, 5121, 5123


def box(lo, hi):
    return [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]


class Gltf:
    def __init__(self):
        self.blob = b""
        self.views, self.accessors = [], []
        self.meshes, self.nodes, self.skins = [], [], []
        self.samplers, self.channels = [], []

    def accessor(self, fmt, rows, typ, ctype=FLOAT, minmax=False):
        """rows of struct format fmt (little-endian) as one accessor; its
        index.  minmax: the min and max glTF requires of POSITION and of an
        animation's input."""
        data = b"".join(struct.pack("<" + fmt, *r) for r in rows)
        while len(self.blob) % 4:
            self.blob += b"\0"
        self.views.append({"buffer": 0, "byteOffset": len(self.blob), "byteLength": len(data)})
        self.blob += data
        acc = {"bufferView": len(self.views) - 1, "componentType": ctype, "count": len(rows), "type": typ}
        if minmax:
            acc["min"] = [min(r[i] for r in rows) for i in range(len(rows[0]))]
            acc["max"] = [max(r[i] for r in rows) for i in range(len(rows[0]))]
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def mesh(self, name, positions, indices=None, joints=None, weights=None):
        """One primitive; joints and weights: one 4-tuple per vertex."""
        attrs = {"POSITION": self.accessor("3f", positions, "VEC3", minmax=True)}
        if joints:
            attrs["JOINTS_0"] = self.accessor("4B", joints, "VEC4", ctype=UBYTE)
            attrs["WEIGHTS_0"] = self.accessor("4f", weights, "VEC4")
        prim = {"attributes": attrs}
        if indices:
            prim["indices"] = self.accessor("H", [(i,) for i in indices], "SCALAR", ctype=USHORT)
        self.meshes.append({"name": name, "primitives": [prim]})
        return len(self.meshes) - 1

    def box_mesh(self, name, corners, joints=None, weights=None):
        return self.mesh(name, corners, BOX_TRIS, joints, weights)

    def node(self, **kw):
        self.nodes.append(kw)
        return len(self.nodes) - 1

    def skin(self, joints, inverse_binds):
        """inverse_binds: one column-major 4x4 (16 floats) per joint."""
        self.skins.append({"joints": joints,
                           "inverseBindMatrices": self.accessor("16f", inverse_binds, "MAT4")})
        return len(self.skins) - 1

    def track(self, node, path, times, values, interp="LINEAR"):
        """values: one per key (CUBICSPLINE: in-tangent, value, out-tangent
        per key, glTF 2.0 appendix C)."""
        n = len(values[0])
        inp = self.accessor("f", [(t,) for t in times], "SCALAR", minmax=True)
        out = self.accessor("%df" % n, values, {3: "VEC3", 4: "VEC4"}[n])
        self.samplers.append({"input": inp, "output": out, "interpolation": interp})
        self.channels.append({"sampler": len(self.samplers) - 1, "target": {"node": node, "path": path}})

    def document(self, roots, animation="move"):
        doc = {
            "asset": {"version": "2.0"},
            "buffers": [{"uri": "data:application/octet-stream;base64," + base64.b64encode(self.blob).decode(),
                         "byteLength": len(self.blob)}],
            "bufferViews": self.views, "accessors": self.accessors,
            "meshes": self.meshes, "nodes": self.nodes,
            "scenes": [{"nodes": roots}], "scene": 0,
        }
        if self.channels:
            doc["animations"] = [{"name": animation, "samplers": self.samplers, "channels": self.channels}]
        if self.skins:
            doc["skins"] = self.skins
        return doc

    def encode(self, roots, animation="move"):
        return json.dumps(self.document(roots, animation)).encode()

    def write(self, path, roots, animation="move"):
        with open(path, "wb") as f:
            f.write(self.encode(roots, animation))

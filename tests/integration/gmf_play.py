"""A .gmf played as a Leadwerks loader that plays keys and skins does
(research/gmf.md), written from the research notes, never from meshfs's
writer: the tests that check where animated geometry goes (test_node_anim,
test_native) read the views with it."""

import struct


def inverse16(m):
    """Inverse of a flat row-major 4x4 (Gauss-Jordan)."""
    a = [list(m[r * 4:r * 4 + 4]) + [float(r == c) for c in range(4)] for r in range(4)]
    for c in range(4):
        p = max(range(c, 4), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        d = a[c][c]
        a[c] = [x / d for x in a[c]]
        for r in range(4):
            if r != c:
                f = a[r][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
    return [a[r][4 + c] for r in range(4) for c in range(4)]


def gmf_points(path):
    """{frame: [points]} of every surface, canonical coordinates, as
    research/gmf.md describes the file: blocks (tag, kids, size, payload,
    kids); MESH/NODE/BONE matrices row-vector, local to the parent block
    (global = local x parent global); ANIMATIONKEYS one local 4x4 per frame
    in the same convention (a block without keys keeps its matrix); BONE =
    bind pose; BONEINDICE/BONEWEIGHT u8 x 4, weights out of 255.  A vertex
    with weights is skinned: vertex x host x inverse(bind) x pose, summed
    by weight; else vertex x its block's global.  gmf is left-handed:
    (x, y, -z) is canonical."""
    with open(path, "rb") as f:
        data = f.read()

    def block(o):
        tag, nk, size = struct.unpack_from("<3i", data, o)
        o += 12
        payload = data[o:o + size]
        o += size
        kids = []
        for _ in range(nk):
            k, o = block(o)
            kids.append(k)
        return (tag, payload, kids), o

    def mmul(a, b):
        return [sum(a[r * 4 + k] * b[k * 4 + c] for k in range(4)) for r in range(4) for c in range(4)]

    def pt(p, m):
        return [p[0] * m[c] + p[1] * m[4 + c] + p[2] * m[8 + c] + m[12 + c] for c in range(3)]

    root, _ = block(0)
    nframes = 0
    stack = [root]
    while stack:
        b = stack.pop()
        for k in b[2]:
            if k[0] == 8:
                nframes = max(nframes, struct.unpack_from("<i", k[1])[0])
            stack.append(k)
    ident16 = [float(i % 5 == 0) for i in range(16)]
    bones, surfaces = {}, []

    def posed(b, m, parents):
        keys = [k for k in b[2] if k[0] == 8]
        out = []
        for f in range(nframes):
            local = m
            if keys:
                n = struct.unpack_from("<i", keys[0][1])[0]
                if n:
                    local = list(struct.unpack_from("<16f", keys[0][1], 4 + 64 * min(f, n - 1)))
            out.append(mmul(local, parents[f]))
        return out

    def walk(b, still, parents, bind_parent):
        tag, p, kids = b
        m = list(struct.unpack_from("<16f", p)) if tag in (2, 3, 4) else None
        if tag in (2, 3):
            g, glob = mmul(m, still), posed(b, m, parents)
            for k in kids:
                if k[0] == 10:
                    arrays = {}
                    for a in k[2]:
                        if a[0] == 5:
                            n, kind, typ, el = struct.unpack_from("<4i", a[1])
                            fmt = "f" if typ == 8 else "B"
                            v = struct.unpack_from("<%d%s" % (n * el, fmt), a[1], 16)
                            arrays[kind] = [v[i * el:(i + 1) * el] for i in range(n)]
                    surfaces.append((g, glob, arrays))
            for k in kids:
                walk(k, g, glob, g)
        elif tag == 4:
            bid = struct.unpack_from("<i", p, 64)[0]
            bind, pose = mmul(m, bind_parent), posed(b, m, parents)
            bones[bid] = (inverse16(bind), pose)
            for k in kids:
                walk(k, still, pose, bind)

    for k in root[2]:  # root is the FILE block
        walk(k, ident16, [ident16] * max(nframes, 1), ident16)
    out = {f: [] for f in range(nframes)}
    for g, glob, arrays in surfaces:
        ids, ws = arrays.get(7), arrays.get(8)
        for i, v in enumerate(arrays[1]):
            for f in range(nframes):
                if ws and any(ws[i]):
                    acc = [0.0, 0.0, 0.0]
                    for b, w in zip(ids[i], ws[i]):
                        if w:
                            inv, pose = bones[b]
                            q = pt(pt(v, g), mmul(inv, pose[f]))
                            acc = [x + w / 255 * y for x, y in zip(acc, q)]
                    q = acc
                else:
                    q = pt(v, glob[f])
                out[f].append([q[0], q[1], -q[2]])
    return out

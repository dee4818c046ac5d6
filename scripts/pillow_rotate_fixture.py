#!/usr/bin/env python3
"""Writes tests/fixtures/pillow_rotate_32x32.txt: Pillow's `Image.rotate(angle, NEAREST,
expand=False, fillcolor=0)` of a 32x32 image (torchvision's `RandomRotation` on a PIL image), as
the input pixel each output pixel shows, for float32 angles. It also counts the angles where the
f64-floor rotation fedrun used before (`old_fedrun`) differs from Pillow (about 1 in 10, one
pixel each) and checks that the 16.16 fixed-point model fedrun now uses (`new_fedrun`) differs
on none. Needs Pillow and numpy: torchenv/bin/pip install pillow.
"""
import math, numpy as np
from PIL import Image
W=H=32
idx = (np.arange(W*H, dtype=np.int32)+1).reshape(H,W)
img = Image.fromarray(idx, mode="I")
def pil_map(angle):
    out = np.array(img.rotate(angle, resample=Image.NEAREST, expand=False, fillcolor=0))
    return [int(v)-1 for v in out.reshape(-1)]
def old_fedrun(angle):
    r15=lambda v: round(v*1e15)/1e15  # approx of (v*1e15).round()/1e15 (ties differ, fine)
    t=-math.radians(math.fmod(angle,360.0))
    c,s=r15(math.cos(t)),r15(math.sin(t))
    cx,cy=W/2,H/2
    a2=c*-cx+s*-cy+cx; a5=-s*-cx+c*-cy+cy
    res=[]
    for i in range(H):
        for j in range(W):
            x,y=j+0.5,i+0.5
            xin=c*x+s*y+a2; yin=-s*x+c*y+a5
            res.append(int(yin)*W+int(xin) if (0<=xin<W and 0<=yin<H) else -1)
    return res
rng=np.random.default_rng(7)
cands=[float(np.float32(a)) for a in rng.uniform(-10,10,4000)]
diff=[]
for a in cands:
    p=pil_map(a); o=old_fedrun(a)
    n=sum(1 for u,v in zip(p,o) if u!=v)
    if n: diff.append((a,n))
print(len(diff), "of", len(cands), "angles differ; examples", diff[:5])
chosen=[float(np.float32(x)) for x in (7.25,-4.2,9.99,-9.5,0.001)]+[d[0] for d in diff[:3]]
import os
with open(os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "pillow_rotate_32x32.txt"), "w") as f:
    f.write("# Pillow %s Image.rotate(angle, NEAREST, expand=False, fillcolor=0) of a 32x32 image: per angle (a float32, as torchvision draws it), the input pixel each output pixel shows, row-major; -1 is black\n" % Image.__version__)
    for a in chosen:
        f.write(repr(a)+": "+" ".join(map(str,pil_map(a)))+"\n")
print(chosen)

def new_fedrun(angle):
    m = angle % 360.0
    t = -math.radians(m)
    c, s, ns = round(math.cos(t),15), round(math.sin(t),15), round(-math.sin(t),15)
    cx, cy = W/2, H/2
    a2 = (c*-cx + s*-cy + 0.0) + cx; a5 = (ns*-cx + c*-cy + 0.0) + cy
    fix = lambda v: math.floor(v*65536.0+0.5)
    A = [fix(c), fix(s), fix(a2 + c*0.5 + s*0.5), fix(ns), fix(c), fix(a5 + ns*0.5 + c*0.5)]
    res=[]
    for i in range(H):
        for j in range(W):
            xin=(A[2]+j*A[0]+i*A[1])>>16; yin=(A[5]+j*A[3]+i*A[4])>>16
            res.append(yin*W+xin if (0<=xin<W and 0<=yin<H) else -1)
    return res
bad=[a for a in cands if new_fedrun(a)!=pil_map(a)]
print("new model differs on", len(bad))

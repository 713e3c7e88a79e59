"""CPU emulation of the v9 chunkwise algorithm (32-step chunks, scaled state, 1e-18 safe path) with its split
products done as 3xTF32, two-piece bf16 or power-of-2-scaled two-piece fp16, against a float64 recurrence.
A numerics study for candidates/*/NOTES.md (split-precision verdict), not part of the harness.

    python3 tools/split_precision_emu.py H T D cases scalar|channel variants   (see main for the names)
"""
import torch, sys, time
torch.set_grad_enabled(False)
M16 = -65536  # 0xffff0000 as int32

def bits(x): return x.view(torch.int32)
def fl(b): return b.view(torch.float32)

def split_bf16(x):
    """kernel: hi = (bits+0x8000)&0xffff0000 (RN ties away); lo = (bits(x-hi)+0x8000)&0xffff0000."""
    h = fl((bits(x) + 0x8000) & M16)
    l = fl((bits(x - h) + 0x8000) & M16)
    return h, l

def split_tf32(x):
    h = fl((bits(x) + 0x1000) & ~0x1fff)
    l = fl((bits(x - h) + 0x1000) & ~0x1fff)
    return h, l

def pow2_scale(x, dim):
    """2^(14 - floor(log2(max|x|))) along dim (1 where the max is 0)."""
    m = x.abs().amax(dim=dim, keepdim=True)
    e = torch.floor(torch.log2(torch.where(m > 0, m, torch.ones_like(m))))
    return torch.where(m > 0, torch.exp2(14 - e), torch.ones_like(m))

def prod_f16s(a, b):
    sa = pow2_scale(a, -1); sb = pow2_scale(b, -2)
    As = a * sa; Bs = b * sb
    a1 = As.half().float(); a2 = (As - a1).half().float()
    b1 = Bs.half().float(); b2 = (Bs - b1).half().float()
    c = a2 @ b1
    c = c + a1 @ b2
    c = c + a1 @ b1
    return c / sa / sb

def prod_f16k(a, b):
    """kernel's K^T Vt: a = K^T (i x s), scale per s (k dim) folded into b: a' = a sk_s, b' = b / sk_s, then
    per-column (j) scale of b' over s."""
    sk = pow2_scale(a, -2)          # (1, s): max over i of K^T[:, s] = row s of K
    As = a * sk
    Bp = b / sk.transpose(-1, -2)
    sb = pow2_scale(Bp, -2)
    Bs = Bp * sb
    a1 = As.half().float(); a2 = (As - a1).half().float()
    b1 = Bs.half().float(); b2 = (Bs - b1).half().float()
    c = a2 @ b1
    c = c + a1 @ b2
    c = c + a1 @ b1
    return c / sb

def prod(a, b, mode):
    if mode == 'f16k':
        return prod_f16k(a, b)
    if mode == 'bf16x4':
        a1, a2 = split_bf16(a); b1, b2 = split_bf16(b)
        return ((a2 @ b2 + a2 @ b1) + a1 @ b2) + a1 @ b1
    if mode == 'bf16x6':   # three-piece bf16: a1b1 + (a1b2 + a2b1) + (a1b3 + a2b2 + a3b1)
        a1, r = split_bf16(a); a2, a3 = split_bf16(a - a1)
        b1, r = split_bf16(b); b2, b3 = split_bf16(b - b1)
        return (((a1 @ b3 + a2 @ b2 + a3 @ b1) + a1 @ b2) + a2 @ b1) + a1 @ b1
    if mode == 'f16s':
        return prod_f16s(a, b)
    """a @ b with split precision, fp32 accumulation (products of the pieces are exact in fp32)."""
    if mode == 'fp32':
        return a @ b
    sp = split_bf16 if mode == 'bf16' else split_tf32
    a1, a2 = sp(a); b1, b2 = sp(b)
    c = a2 @ b1
    c = c + a1 @ b2
    c = c + a1 @ b1
    return c

def chunk_emu(q, k, v, gate, beta, chan, modes, C=32, safe_thr=1e-18):
    """q,k,v (H,T,D) fp32; gate (H,T) or (H,T,D); beta (H,T) or None.  modes: dict product->mode
    products: 'A' (Q K^T), 'AV' (A Vt), 'QS' (Q S0), 'KV' (K^T Vt)."""
    H, T, D = q.shape
    S = torch.zeros(H, D, D, dtype=torch.float32)  # S[i, j]
    y = torch.empty(H, T, D, dtype=torch.float32)
    nsafe = 0
    for t0 in range(0, T, C):
        n = min(C, T - t0)
        Q = q[:, t0:t0+n]; K = k[:, t0:t0+n]; V = v[:, t0:t0+n]
        if chan:
            g = gate[:, t0:t0+n]          # (H,n,D)
            G = torch.cumprod(g, dim=1)   # fp32
            GC = G[:, -1]                 # (H,D)
            safe = bool((GC < safe_thr).any())
        else:
            g = gate[:, t0:t0+n]
            G = torch.cumprod(g, dim=1)   # (H,n)
            GC = G[:, -1]
            safe = bool((GC < safe_thr).any())
        if safe:
            nsafe += 1
            Ssafe = S.clone()
            ysafe = torch.empty(H, n, D, dtype=torch.float32)
            for t in range(n):
                if chan:
                    Ssafe = Ssafe * g[:, t, None, :] + K[:, t, :, None] * V[:, t, None, :]
                else:
                    Ssafe = Ssafe * g[:, t, None, None] + K[:, t, :, None] * (beta[:, t0+t, None, None] * V[:, t, None, :])
                ysafe[:, t] = (Q[:, t, :, None] * Ssafe).sum(-2)
            hs = (GC < safe_thr).any(-1) if chan else (GC < safe_thr)   # per head
            if bool(hs.all()):
                y[:, t0:t0+n] = ysafe; S = Ssafe; continue
            G = torch.where(hs.view(-1, *([1] * (G.dim() - 1))), torch.ones_like(G), G)
            GC = torch.where(hs.view(-1, *([1] * (GC.dim() - 1))), torch.ones_like(GC), GC)
        if chan:
            Vt = V / G
        else:
            cf = beta[:, t0:t0+n] / G
            Vt = V * cf[:, :, None]
        A = prod(Q, K.transpose(1, 2), modes['A'])
        A = torch.tril(A)
        if modes['AV'].endswith('_gamma'):   # scalar only: (A o G_t/G_s) (beta v), then y = G_t QS + that
            P = A * (G[:, :, None] / G[:, None, :])
            P = torch.tril(P)
            Yi = prod(P, V * beta[:, t0:t0+n, None], modes['AV'][:-6])
            y[:, t0:t0+n] = prod(Q, S, modes['QS']) * G[:, :, None] + Yi
            S = (S + prod(K.transpose(1, 2), Vt, modes['KV'])) * GC[:, None, None]
            if safe:
                y[:, t0:t0+n] = torch.where(hs[:, None, None], ysafe, y[:, t0:t0+n])
                S = torch.where(hs[:, None, None], Ssafe, S)
            continue
        O = prod(Q, S, modes['QS']) + prod(A, Vt, modes['AV'])
        if chan:
            y[:, t0:t0+n] = O * G
            S = (S + prod(K.transpose(1, 2), Vt, modes['KV'])) * GC[:, None, :]
        else:
            y[:, t0:t0+n] = O * G[:, :, None]
            S = (S + prod(K.transpose(1, 2), Vt, modes['KV'])) * GC[:, None, None]
        if safe:
            y[:, t0:t0+n] = torch.where(hs[:, None, None], ysafe, y[:, t0:t0+n])
            S = torch.where(hs[:, None, None], Ssafe, S)
    return y, nsafe

def ref64(q, k, v, gate, beta, chan):
    q, k, v, gate = q.double(), k.double(), v.double(), gate.double()
    H, T, D = q.shape
    S = torch.zeros(H, D, D, dtype=torch.float64)
    y = torch.empty(H, T, D, dtype=torch.float64)
    for t in range(T):
        if chan:
            S = S * gate[:, t, None, :] + k[:, t, :, None] * v[:, t, None, :]
        else:
            S = S * gate[:, t, None, None] + k[:, t, :, None] * (beta[:, t, None, None].double() * v[:, t, None, :])
        y[:, t] = torch.einsum('hi,hij->hj', q[:, t], S)
    return y

def make(H, T, D, chan, case, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(H, T, D, generator=g) for _ in range(3))
    gs = (H, T, D) if chan else (H, T)
    gate = torch.sigmoid(torch.randn(gs, generator=g) + 2.0)
    if case == 'long':
        gate = 0.99 + 0.01 * torch.rand(gs, generator=g)
        gate = gate.clamp(max=float(torch.tensor(1.0).nextafter(torch.tensor(0.0))))
    if case == 'tiny':
        gate = torch.where(torch.rand(gs, generator=g) < 0.3, 10.0 ** (-15 - 15 * torch.rand(gs, generator=g)), gate)
    if case == 'unif4':
        gate = 0.4 + 0.6 * torch.rand(gs, generator=g)
    if case == 'unif':
        gate = torch.rand(gs, generator=g)
    if case == 'tiny1':
        gate = torch.where(torch.rand(gs, generator=g) < 0.01, 10.0 ** (-15 - 15 * torch.rand(gs, generator=g)), gate)
    beta = torch.rand(H, T, generator=g)
    return q, k, v, gate.float(), beta

def errtol(y, gold):
    gold = gold.double()
    rms = gold.pow(2).mean().sqrt()
    return ((y.double() - gold).abs() / (1e-4 * rms + 1e-4 * gold.abs())).flatten()

VARIANTS = {
    'tf32x3': dict(A='tf32', AV='tf32', QS='tf32', KV='tf32'),
    'bf16x3': dict(A='bf16', AV='bf16', QS='bf16', KV='bf16'),
    'bf16_stateTF': dict(A='bf16', AV='bf16', QS='tf32', KV='tf32'),
    'bf16_KVtf': dict(A='bf16', AV='bf16', QS='bf16', KV='tf32'),
    'bf16_stateonly': dict(A='tf32', AV='tf32', QS='bf16', KV='bf16'),
    'bf16x4': dict(A='bf16x4', AV='bf16x4', QS='bf16x4', KV='bf16x4'),
    'bf16x6': dict(A='bf16x6', AV='bf16x6', QS='bf16x6', KV='bf16x6'),
    'f16_state': dict(A='tf32', AV='tf32', QS='f16s', KV='f16s'),
    'f16_kern': dict(A='f16s', AV='tf32', QS='f16s', KV='f16k'),
    'f16_kern_gamma': dict(A='f16s', AV='f16s_gamma', QS='f16s', KV='f16k'),
    'f16_gamma': dict(A='f16s', AV='f16s_gamma', QS='f16s', KV='f16s'),
    'f16_AVtf': dict(A='f16s', AV='tf32', QS='f16s', KV='f16s'),
    'tf32_gamma': dict(A='tf32', AV='tf32_gamma', QS='tf32', KV='tf32'),
    'f16x2_scaled': dict(A='f16s', AV='f16s', QS='f16s', KV='f16s'),
}

if __name__ == '__main__':
    H, T, D = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cases = sys.argv[4].split(',')
    probs = sys.argv[5].split(',') if len(sys.argv) > 5 else ['scalar', 'channel']
    variants = sys.argv[6].split(',') if len(sys.argv) > 6 else list(VARIANTS)
    for prob in probs:
        chan = prob == 'channel'
        for case in cases:
            q, k, v, gate, beta = make(H, T, D, chan, case, 1234 + T + D)
            t1 = time.time()
            gold = ref64(q, k, v, gate, beta, chan)
            tr = time.time() - t1
            for vn in variants:
                y, nsafe = chunk_emu(q, k, v, gate, beta, chan, VARIANTS[vn])
                e = errtol(y, gold)
                es = e.sort().values
                N = es.numel()
                def qt(p, es=es, N=N): return es[min(N - 1, int(p * N))].item()
                print(f"{prob:7s} H={H} T={T} D={D} {case:5s} {vn:13s} safe={nsafe:4d} N={N} "
                      f"mean={e.mean():.4f} p99={qt(0.99):.4f} p99.9={qt(0.999):.4f} p99.99={qt(0.9999):.4f} "
                      f"p99.999={qt(0.99999):.4f} max={es[-1]:.4f}  (ref {tr:.0f}s)", flush=True)
                if vn.startswith('bf16'):
                    print("   exceed frac: " + " ".join(f">{x}:{(e > x).double().mean().item():.2e}" for x in (0.1, 0.2, 0.3, 0.4, 0.5)), flush=True)

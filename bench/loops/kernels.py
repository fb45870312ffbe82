"""Loop-heavy NumPy kernels, written as loops the way Numba's users write them
(issue 21).  Each is plain Python over NumPy arrays and scalars: the same
function runs plain, under framejit and under Numba's @njit.

KERNELS maps a name to (function, make_args(n), sizes): make_args builds
fresh inputs for a size n (the functions may write into them), sizes are the
n of the quick and the full run.  The kinds follow public NumPy benchmark
collections: recurrences, stencils and time stepping, distance matrices,
n-body, matrix products and convolutions, Mandelbrot, histograms/grouping,
ODE integration, polynomials, triangular loops (bounds that follow an
enclosing index).
"""
import numpy as np


def recurrence(a, b):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.999 + b[i]
    return a


def prefix_sum(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out


def ema(x, out, alpha):
    m = x[0]
    for i in range(x.shape[0]):
        m = alpha * x[i] + (1.0 - alpha) * m
        out[i] = m
    return out


def moving_sum(x, out, w):
    s = 0.0
    for i in range(w):
        s = s + x[i]
    for i in range(w, x.shape[0]):
        s = s + x[i] - x[i - w]
        out[i] = s
    return out


def stencil3(u, v):
    for i in range(1, u.shape[0] - 1):
        v[i] = (u[i - 1] + u[i + 1]) * 0.5 - u[i]
    return v


def jacobi2d(u, v):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
    return v


def heat1d(u, tmp, steps):
    r = 0.25
    for t in range(steps):
        for i in range(1, u.shape[0] - 1):
            tmp[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, u.shape[0] - 1):
            u[i] = tmp[i]
    return u


def wave1d(u, prev, nxt, steps):
    c2 = 0.09
    for t in range(steps):
        for i in range(1, u.shape[0] - 1):
            nxt[i] = 2.0 * u[i] - prev[i] + c2 * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(u.shape[0]):
            prev[i] = u[i]
            u[i] = nxt[i]
    return u


def pairwise_distance(x, d):
    n, k = x.shape
    for i in range(n):
        for j in range(n):
            s = 0.0
            for m in range(k):
                t = x[i, m] - x[j, m]
                s = s + t * t
            d[i, j] = np.sqrt(s)
    return d


def weighted_distance(a, b, w, d):
    k, m = a.shape
    n = b.shape[1]
    for ii in range(m):
        for jj in range(n):
            s = 0.0
            for kk in range(k):
                t = (a[kk, ii] - b[kk, jj]) / w[kk, ii]
                s = s + t * t
            d[ii, jj] = np.sqrt(s)
    return d


def nbody_accel(pos, mass, acc):
    n = pos.shape[0]
    for i in range(n):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(n):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + 0.01
            inv = mass[j] / (r2 * np.sqrt(r2))
            ax = ax + dx * inv
            ay = ay + dy * inv
            az = az + dz * inv
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az
    return acc


def matmul_loops(a, b, c):
    n, k = a.shape
    m = b.shape[1]
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s = s + a[i, p] * b[p, j]
            c[i, j] = s
    return c


def conv1d(x, w, out):
    k = w.shape[0]
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(k):
            s = s + x[i + j] * w[j]
        out[i] = s
    return out


def conv2d3x3(img, w, out):
    for i in range(1, img.shape[0] - 1):
        for j in range(1, img.shape[1] - 1):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s = s + img[i + di - 1, j + dj - 1] * w[di, dj]
            out[i, j] = s
    return out


def mandelbrot(w, h, maxiter, out):
    for r in range(h):
        for c in range(w):
            cx = -2.0 + 3.0 * c / w
            cy = -1.5 + 3.0 * r / h
            x = 0.0
            y = 0.0
            count = 0
            for k in range(maxiter):
                x, y = x * x - y * y + cx, 2.0 * x * y + cy
                count += x * x + y * y <= 4.0
            out[r, c] = count
    return out


def histogram(bins, counts):
    for i in range(bins.shape[0]):
        counts[bins[i]] += 1
    return counts


def group_sums(keys, vals, sums):
    for i in range(keys.shape[0]):
        sums[keys[i]] += vals[i]
    return sums


def lorenz(steps, out):
    x, y, z = 1.0, 1.0, 1.0
    dt = 0.001
    for t in range(steps):
        dx = 10.0 * (y - x)
        dy = x * (28.0 - z) - y
        dz = x * y - 8.0 / 3.0 * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
        out[t, 0] = x
        out[t, 1] = y
        out[t, 2] = z
    return out


def logistic(r, steps, out):
    x = 0.5
    for t in range(steps):
        x = r * x * (1.0 - x)
        out[t] = x
    return out


def horner(x, coef, out):
    for i in range(x.shape[0]):
        s = 0.0
        for k in range(coef.shape[0]):
            s = s * x[i] + coef[k]
        out[i] = s
    return out


def trapezoid(y, dx):
    s = 0.0
    for i in range(1, y.shape[0]):
        s = s + (y[i - 1] + y[i]) * 0.5 * dx
    return s


def dot_loop(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + a[i] * b[i]
    return s


def life_step(g, out):
    for i in range(1, g.shape[0] - 1):
        for j in range(1, g.shape[1] - 1):
            n = (g[i - 1, j - 1] + g[i - 1, j] + g[i - 1, j + 1] + g[i, j - 1] + g[i, j + 1] +
                 g[i + 1, j - 1] + g[i + 1, j] + g[i + 1, j + 1])
            out[i, j] = (n == 3) | ((n == 2) & (g[i, j] == 1))
    return out


def sym_distance(x, d):
    # triangular: the inner loop's bounds follow the outer index
    n, k = x.shape
    for i in range(n):
        for j in range(i + 1, n):
            s = 0.0
            for m in range(k):
                t = x[i, m] - x[j, m]
                s = s + t * t
            r = np.sqrt(s)
            d[i, j] = r
            d[j, i] = r
    return d


def back_substitution(u, b, x):
    n = b.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s = s - u[i, j] * x[j]
        x[i] = s / u[i, i]
    return x


def escape_time(w, h, maxiter, out):
    # the classic Mandelbrot: a while loop with a compound test per pixel
    for r in range(h):
        for c in range(w):
            cx = -2.0 + 3.0 * c / w
            cy = -1.5 + 3.0 * r / h
            x = 0.0
            y = 0.0
            k = 0
            while k < maxiter and x * x + y * y <= 4.0:
                x, y = x * x - y * y + cx, 2.0 * x * y + cy
                k += 1
            out[r, c] = k
    return out


def first_passage(steps, level, out):
    # per walk, the first step at which it leaves [-level, level]: a search
    for r in range(steps.shape[0]):
        s = 0.0
        i = 0
        while i < steps.shape[1] and abs(s) < level:
            s = s + steps[r, i]
            i += 1
        out[r] = i
    return out


def linear_search(grid, queries, out):
    # per query, the first grid point at or above it: a search ending in a break
    for q in range(queries.shape[0]):
        k = grid.shape[0]
        for j in range(grid.shape[0]):
            if grid[j] >= queries[q]:
                k = j
                break
        out[q] = k
    return out


def _upper(n):
    return np.triu(_rng(29).random((n, n))) + n * np.eye(n)


def _rng(n):
    return np.random.default_rng(n)


KERNELS = {
    "recurrence": (recurrence, lambda n: (np.zeros(n), _rng(1).random(n)), (10**5, 10**6)),
    "prefix_sum": (prefix_sum, lambda n: (_rng(2).random(n), np.zeros(n)), (10**5, 10**6)),
    "ema": (ema, lambda n: (_rng(3).random(n), np.zeros(n), 0.1), (10**5, 10**6)),
    "moving_sum": (moving_sum, lambda n: (_rng(4).random(n), np.zeros(n), 50), (10**5, 10**6)),
    "stencil3": (stencil3, lambda n: (_rng(5).random(n), np.zeros(n)), (10**5, 10**6)),
    "jacobi2d": (jacobi2d, lambda n: (_rng(6).random((n, n)), np.zeros((n, n))), (300, 1000)),
    "heat1d": (heat1d, lambda n: (_rng(7).random(n), np.zeros(n), 100), (1000, 5000)),
    "wave1d": (wave1d, lambda n: (np.sin(np.linspace(0, 3, n)), np.sin(np.linspace(0, 3, n)), np.zeros(n), 100),
               (1000, 5000)),
    "pairwise_distance": (pairwise_distance, lambda n: (_rng(8).random((n, 3)), np.zeros((n, n))), (200, 600)),
    "weighted_distance": (weighted_distance, lambda n: (_rng(9).random((n, n)), _rng(10).random((n, n)),
                                                        _rng(11).random((n, n)) + 0.5, np.zeros((n, n))), (40, 100)),
    "nbody_accel": (nbody_accel, lambda n: (_rng(12).random((n, 3)), _rng(13).random(n), np.zeros((n, 3))), (200, 600)),
    "matmul_loops": (matmul_loops, lambda n: (_rng(14).random((n, n)), _rng(15).random((n, n)), np.zeros((n, n))),
                     (60, 150)),
    "conv1d": (conv1d, lambda n: (_rng(16).random(n + 15), _rng(17).random(16), np.zeros(n)), (10**5, 10**6)),
    "conv2d3x3": (conv2d3x3, lambda n: (_rng(18).random((n, n)), _rng(19).random((3, 3)), np.zeros((n, n))),
                  (200, 600)),
    "mandelbrot": (mandelbrot, lambda n: (n, n, 50, np.zeros((n, n), dtype=np.int64)), (60, 200)),
    "histogram": (histogram, lambda n: (_rng(20).integers(0, 100, n), np.zeros(100, dtype=np.int64)),
                  (10**5, 10**6)),
    "group_sums": (group_sums, lambda n: (_rng(21).integers(0, 1000, n), _rng(22).random(n), np.zeros(1000)),
                   (10**5, 10**6)),
    "lorenz": (lorenz, lambda n: (n, np.zeros((n, 3))), (10**5, 10**6)),
    "logistic": (logistic, lambda n: (3.7, n, np.zeros(n)), (10**5, 10**6)),
    "horner": (horner, lambda n: (_rng(23).random(n), _rng(24).random(8), np.zeros(n)), (10**5, 10**6)),
    "trapezoid": (trapezoid, lambda n: (_rng(25).random(n), 0.01), (10**5, 10**6)),
    "dot_loop": (dot_loop, lambda n: (_rng(26).random(n), _rng(27).random(n)), (10**5, 10**6)),
    "sym_distance": (sym_distance, lambda n: (_rng(30).random((n, 3)), np.zeros((n, n))), (200, 600)),
    "back_substitution": (back_substitution, lambda n: (_upper(n), _rng(31).random(n), np.zeros(n)),
                          (300, 1500)),
    "escape_time": (escape_time, lambda n: (n, n, 100, np.zeros((n, n), dtype=np.int64)), (60, 200)),
    "first_passage": (first_passage, lambda n: (_rng(32).standard_normal((n, 2000)), 40.0,
                                                np.zeros(n, dtype=np.int64)), (100, 1000)),
    "linear_search": (linear_search, lambda n: (np.sort(_rng(33).random(2000)), _rng(34).random(n),
                                                np.zeros(n, dtype=np.int64)), (100, 1000)),
    "life_step": (life_step, lambda n: ((_rng(28).random((n, n)) > 0.6).astype(np.int64),
                                       np.zeros((n, n), dtype=np.int64)), (200, 600)),
}

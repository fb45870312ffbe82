"""The n-body simulation on Python floats and lists (loop-bound)."""
import math

PI = math.pi
DAYS = 365.24
SOLAR_MASS = 4 * PI * PI


def bodies():
    return [
        ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], SOLAR_MASS),
        ([4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01],
         [1.66007664274403694e-03 * DAYS, 7.69901118419740425e-03 * DAYS,
          -6.90460016972063023e-05 * DAYS], 9.54791938424326609e-04 * SOLAR_MASS),
        ([8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01],
         [-2.76742510726862411e-03 * DAYS, 4.99852801234917238e-03 * DAYS,
          2.30417297573763929e-05 * DAYS], 2.85885980666130812e-04 * SOLAR_MASS),
        ([1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01],
         [2.96460137564761618e-03 * DAYS, 2.37847173959480950e-03 * DAYS,
          -2.96589568540237556e-05 * DAYS], 4.36624404335156298e-05 * SOLAR_MASS),
        ([1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01],
         [2.68067772490389322e-03 * DAYS, 1.62824170038242295e-03 * DAYS,
          -9.51592254519715870e-05 * DAYS], 5.15138902046611451e-05 * SOLAR_MASS),
    ]


def energy(system):
    e = 0.0
    for i, (r1, v1, m1) in enumerate(system):
        e += 0.5 * m1 * (v1[0] ** 2 + v1[1] ** 2 + v1[2] ** 2)
        for r2, _, m2 in system[i + 1:]:
            dx, dy, dz = r1[0] - r2[0], r1[1] - r2[1], r1[2] - r2[2]
            e -= m1 * m2 / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(system, dt, steps):
    pairs = [(system[i], system[j]) for i in range(len(system))
             for j in range(i + 1, len(system))]
    for _ in range(steps):
        for (r1, v1, m1), (r2, v2, m2) in pairs:
            dx, dy, dz = r1[0] - r2[0], r1[1] - r2[1], r1[2] - r2[2]
            mag = dt * (dx * dx + dy * dy + dz * dz) ** -1.5
            b1, b2 = m1 * mag, m2 * mag
            v1[0] -= dx * b2
            v1[1] -= dy * b2
            v1[2] -= dz * b2
            v2[0] += dx * b1
            v2[1] += dy * b1
            v2[2] += dz * b1
        for r, (vx, vy, vz), _ in system:
            r[0] += dt * vx
            r[1] += dt * vy
            r[2] += dt * vz


def main():
    system = bodies()
    e0 = energy(system)
    advance(system, 0.01, 150000)
    assert abs(energy(system) - e0) < 1e-3


if __name__ == "__main__":
    main()

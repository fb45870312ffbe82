"""Generators, generator expressions and comprehensions."""


def primes(limit):
    sieve = bytearray([1]) * limit
    for p in range(2, limit):
        if sieve[p]:
            yield p
            sieve[p * p::p] = bytes(len(range(p * p, limit, p)))


def windows(seq, k):
    it = iter(seq)
    win = [next(it) for _ in range(k)]
    yield tuple(win)
    for x in it:
        win = win[1:] + [x]
        yield tuple(win)


def words(n):
    return [f"w{i % 97}" for i in range(n)]


def main():
    total = 0
    for _ in range(150):
        ps = list(primes(20000))
        total += sum(a * b - c for a, b, c in windows(ps, 3))
        counts = {}
        for w in words(5000):
            counts[w] = counts.get(w, 0) + 1
        total += sum(v for v in counts.values() if v > 50)
        total += len({x % 101 for x in ps})
        total += sum(sum(row) for row in [[i * j for j in range(30)] for i in range(30)])
    assert total > 0


if __name__ == "__main__":
    main()

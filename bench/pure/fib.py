"""Recursive Fibonacci: a call-bound pure-Python program."""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    assert fib(32) == 2178309


if __name__ == "__main__":
    main()

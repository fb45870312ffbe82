"""JSON round trips of nested documents (the json module's Python and C parts)."""
import json


def document(i):
    return {"id": i, "name": f"item-{i}", "tags": [f"t{k}" for k in range(i % 7)],
            "price": i * 1.25, "stock": {"a": i % 3, "b": [i, i + 1, None, True]},
            "notes": "x" * (i % 40)}


def main():
    docs = [document(i) for i in range(400)]
    n = 0
    for _ in range(120):
        text = json.dumps(docs, indent=1, sort_keys=True)
        back = json.loads(text)
        n += len(back)
        assert back[7] == docs[7]
    assert n == 48000


if __name__ == "__main__":
    main()

"""A small seeded corpus for the engine tests, with what the staged pipeline must get right.

Made in Python (not with `cargo run --example corpus`) so the tests need only the release
binary. It holds: near-duplicate families (a few words substituted, a sentence dropped or
added, paragraphs swapped), chains (edits of edits, so the ends may fall below the threshold
while each link is above it), byte-identical copies in other folders (and so in other shards),
a hot family (many near-copies of one document: large buckets), an empty file, a binary file,
a tiny file, and a JSON Lines dump whose records repeat and edit some of the files.
"""

import json
import os
import random

# Files per folder: folders end up in different shards of a run.
PER_DIR = 40


def _vocabulary(rng, size=1500):
    """Made-up words, drawn later with Zipf-like weights (a few common, most rare)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))))
    words = sorted(words)
    rng.shuffle(words)
    return words, [1.0 / (i + 1) for i in range(size)]


class _Writer:
    """Draws sentences and documents, and lays the files out in numbered folders."""

    def __init__(self, root, rng):
        self.root, self.rng = root, rng
        self.words, self.weights = _vocabulary(rng)
        self.count = 0

    def sentence(self):
        """A sentence of 6 to 18 words."""
        n = self.rng.randint(6, 18)
        words = self.rng.choices(self.words, self.weights, k=n)
        return " ".join(words).capitalize() + "."

    def paragraphs(self):
        """A document as paragraphs of sentences (about 150 to 400 words)."""
        return [[self.sentence() for _ in range(self.rng.randint(3, 6))]
                for _ in range(self.rng.randint(2, 5))]

    def edit(self, paras, kind):
        """A near-duplicate of `paras` by one kind of edit."""
        rng = self.rng
        paras = [list(p) for p in paras]
        if kind == "substitute":
            out = []
            for p in paras:
                q = []
                for s in p:
                    words = s.split(" ")
                    for i in range(len(words)):
                        if rng.random() < 0.03:
                            words[i] = rng.choice(self.words)
                    q.append(" ".join(words))
                out.append(q)
            return out
        if kind == "drop":
            p = rng.choice([p for p in paras if len(p) > 1] or paras)
            p.pop(rng.randrange(len(p)))
            return paras
        if kind == "add":
            p = rng.choice(paras)
            p.insert(rng.randrange(len(p) + 1), self.sentence())
            return paras
        if kind == "swap" and len(paras) > 1:
            i, j = rng.sample(range(len(paras)), 2)
            paras[i], paras[j] = paras[j], paras[i]
            return paras
        return paras

    def write(self, content):
        """Writes the next file (text or bytes); returns its path."""
        folder = os.path.join(self.root, f"d{self.count // PER_DIR:03d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"doc{self.count:05d}.txt")
        self.count += 1
        data = content.encode("utf-8") if isinstance(content, str) else content
        with open(path, "wb") as f:
            f.write(data)
        return path


def text_of(paras):
    """Paragraphs as a document's text."""
    return "\n\n".join(" ".join(p) for p in paras) + "\n"


def generate(root, seed=1, singles=150, families=30, hot=24):
    """Writes the corpus under `root`; returns the number of files written."""
    rng = random.Random(seed)
    w = _Writer(root, rng)
    pending = []  # texts written later, so copies land in other folders and shards
    kinds = ["substitute", "drop", "add", "swap"]
    for _ in range(families):
        base = w.paragraphs()
        pending.append(text_of(base))
        variant = base
        for _ in range(rng.randint(1, 5)):
            # Half the variants edit the previous variant: chains.
            start = variant if rng.random() < 0.5 else base
            variant = w.edit(start, rng.choice(kinds))
            pending.append(text_of(variant))
        if rng.random() < 0.4:
            pending.append(text_of(base))  # a byte-identical copy
    hot_base = w.paragraphs()
    for _ in range(hot):
        pending.append(text_of(w.edit(hot_base, "substitute")))
    pending.append(text_of(hot_base))
    pending.extend(text_of(w.paragraphs()) for _ in range(singles))
    rng.shuffle(pending)
    texts = []
    for text in pending:
        w.write(text)
        texts.append(text)
    w.write("")  # empty
    w.write(b"\x00\x01binary\x00" * 20)  # binary
    w.write("tiny\n")
    # A dump: copies of files, edits of files and new documents, one record a line.
    with open(os.path.join(root, "dump.jsonl"), "w", encoding="utf-8") as f:
        for i in range(30):
            pick = rng.random()
            if pick < 0.3:
                text = rng.choice(texts)
            elif pick < 0.6:
                text = text_of(w.edit([[s for s in rng.choice(texts).split(" ")]], "substitute"))
            else:
                text = text_of(w.paragraphs())
            f.write(json.dumps({"id": f"rec{i}", "text": text}) + "\n")
    return w.count + 1

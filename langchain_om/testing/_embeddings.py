"""A small deterministic embedder for offline tests of semantic recall."""

from __future__ import annotations

import hashlib
import math
import re

from langchain_core.embeddings import Embeddings

__all__ = ["HashEmbeddings"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbeddings(Embeddings):
    """Bag of hashed word n-grams, L2-normalised: same text, same vector, in every process.

    Texts that share words get a high cosine similarity, so it ranks keyword-like queries the
    way a real embedder would rank near-paraphrases. It needs no model and no network.

    Args:
        dims: vector size.
        ngram: longest word n-gram hashed (1 = words only).

    Example:
        >>> emb = HashEmbeddings(dims=64)
        >>> len(emb.embed_query("green tea"))
        64
        >>> emb.embed_query("green tea") == emb.embed_documents(["green tea"])[0]
        True
    """

    def __init__(self, dims: int = 256, *, ngram: int = 2) -> None:
        if dims < 1 or ngram < 1:
            raise ValueError("dims and ngram must be positive")
        self.dims = dims
        self.ngram = ngram

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        features = list(words)
        for n in range(2, self.ngram + 1):
            features.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
        return features

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "big") % self.dims
            sign = 1.0 if digest[4] & 1 else -1.0
            weight = 1.0 if " " not in feature else 0.5
            vector[bucket] += sign * weight
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:  # no words: a fixed unit vector (cosine stays defined)
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (same function as documents)."""
        return self._embed(text)

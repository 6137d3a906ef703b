"""The one compiled part: the hash chain's writer loop (``clawlog.events._chain_seal``).

Everything else is in pyproject.toml. The extension is optional: where it cannot be built
(no compiler, no OpenSSL headers) the install goes on and the writer hashes in Python,
about 0.7 µs an event slower (BENCHMARKS.md, "Hash chain").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "clawlog.events._chain_seal",
            sources=["clawlog/events/_chain_seal.c"],
            libraries=["crypto"],
            optional=True,
        )
    ]
)

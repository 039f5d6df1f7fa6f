"""The store model: one reading of the bytes on disk, per layout.

Every verb (validate, recover, dump, stats, info, query, diff) and every Spark source derives its
answer from the facts this package states about a store: which segment files there are and how
they follow each other (gaps, overlaps, wrong sizes, links), where each file's valid data ends
and how it ends, and every damage with its finding code and byte position.  A command never
decides on its own what a gap or a torn tail is: it asks the model.
"""

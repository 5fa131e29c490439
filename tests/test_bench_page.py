"""make bench's page (BENCHMARKS.md): the sections it writes are rewritten, the ones other scripts keep
(compile times, online accuracy, the race's cost) survive it."""

from benchmarks.bench import kept_sections


def test_make_bench_keeps_the_sections_other_scripts_write():
    old = "\n".join(
        [
            "# Benchmarks",
            "",
            "## Defaults study (`omkl study defaults`)",  # an older heading of a section make bench writes
            "old rows",
            "",
            "## Compile time (benchmarks/compile_times.py)",
            "compile rows",
            "",
            "## Serving (`omkl serve`)",
            "old serving",
            "",
            '## The race\'s cost (`scaling="auto"`)',
            "race rows",
        ]
    )
    new = ["# Benchmarks", "", "## Defaults study, whole streams (x)", "rows", "", "## Serving (`omkl serve`)", "s"]
    assert kept_sections(old, new) == [
        "",
        "## Compile time (benchmarks/compile_times.py)",
        "compile rows",
        "",
        '## The race\'s cost (`scaling="auto"`)',
        "race rows",
    ]
    assert kept_sections("", new) == []

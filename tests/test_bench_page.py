"""make bench's page (BENCHMARKS.md): the sections it writes are rewritten, the ones other scripts keep
(compile times, online accuracy, the race's cost) survive it, and so do the notes under its main table."""

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


def test_make_bench_keeps_the_notes_under_its_main_table():
    """Paragraphs written by hand under the main table (about some of its rows) survive its rewrite;
    the generated stream's table and the sections after it are not notes."""
    from benchmarks.bench import table_notes

    page = [
        "# Benchmarks",
        "",
        "| case | data |",
        "|---|---|",
        "| a | b |",
        "",
        "Session 57: a note,",
        "two lines.",
        "",
        "Another note.",
        "",
        "Generated stream (`omkl data synth`, chunked zarr + parquet writes, bounded memory):",
        "",
        "| rows × d | chunk rows |",
        "",
        "## Compile time",
        "rows",
    ]
    assert table_notes("\n".join(page)) == ["", "Session 57: a note,", "two lines.", "", "Another note."]
    assert table_notes("\n".join(page[:6] + page[11:])) == []
    assert table_notes("") == []

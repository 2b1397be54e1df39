//! The bundle archive opens in the tools recipients and their IT departments use: Python's
//! `zipfile`, Info-ZIP `unzip`, 7-Zip and libarchive's `bsdtar`, with Japanese names and every
//! byte intact, and past 4 GiB (ZIP64) too.

use std::{
    fs::{self, File},
    io::{Seek, SeekFrom, Write},
    path::Path,
    process::Command,
};

use chrono::NaiveDateTime;
use sha2::{Digest, Sha256};
use watasu::zip::{Entry, Layout, Piece};

fn entry(name: &str, size: u64, crc32: u32, sha256: String) -> Entry {
    let modified = NaiveDateTime::parse_from_str("2026-12-03 09:30:00", "%Y-%m-%d %H:%M:%S").unwrap();
    Entry { name: name.to_owned(), size, crc32, modified, sha256 }
}

fn small_entry(name: &str, content: &[u8]) -> Entry {
    entry(name, content.len() as u64, crc32fast::hash(content), hex::encode(Sha256::digest(content)))
}

/// Writes the archive piece by piece, as a download sends it; `file` gives an entry's bytes, or
/// `None` for an all-zero file left as a hole in a sparse archive.
fn write_archive(path: &Path, layout: &Layout, file: impl Fn(usize) -> Option<Vec<u8>>) {
    let mut out = File::create(path).unwrap();
    for piece in layout.range(0, layout.len()) {
        match piece {
            Piece::Records(bytes) => out.write_all(&bytes).unwrap(),
            Piece::File { entry, offset, len } => match file(entry) {
                Some(content) => out.write_all(&content[offset as usize..(offset + len) as usize]).unwrap(),
                None => {
                    out.seek(SeekFrom::Current(len as i64)).unwrap();
                }
            },
        }
    }
    out.set_len(layout.len()).unwrap();
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .env("LC_ALL", "C.UTF-8")
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed (scripts/test installs it): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Each tool checks every CRC and lists the names with their sizes.
fn names_and_sizes_each_tool_sees(archive: &Path) -> Vec<(&'static str, Vec<(String, u64)>)> {
    let archive = archive.to_str().unwrap();
    let python = run(
        "python3",
        &[
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\n\
             for i in z.infolist(): print(i.file_size, i.filename)",
            archive,
        ],
    );
    let python = python.lines().map(|l| l.split_once(' ').unwrap()).map(|(s, n)| (n.into(), s.parse().unwrap()));
    run("unzip", &["-tq", archive]);
    let unzip = run("unzip", &["-Zl", archive]);
    let unzip = unzip.lines().filter(|l| l.starts_with('-')).map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        (fields[9..].join(" "), fields[3].parse().unwrap())
    });
    run("7z", &["t", archive]);
    let seven = run("7z", &["l", "-slt", archive]);
    let mut seven_entries = Vec::new();
    let mut path = None;
    for line in seven.lines() {
        if let Some(p) = line.strip_prefix("Path = ") {
            path = Some(p.to_owned());
        } else if let (Some(size), Some(p)) = (line.strip_prefix("Size = "), path.as_ref()) {
            if p != archive {
                seven_entries.push((p.clone(), size.parse().unwrap()));
            }
            path = None;
        }
    }
    let bsdtar = run("bsdtar", &["-tvf", archive]);
    let bsdtar = bsdtar.lines().map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        (fields[8..].join(" "), fields[4].parse().unwrap())
    });
    vec![
        ("python zipfile", python.collect()),
        ("unzip", unzip.collect()),
        ("7z", seven_entries),
        ("bsdtar", bsdtar.collect()),
    ]
}

#[test]
fn every_tool_extracts_japanese_names_and_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("見積書 2026年12月.pdf", (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect()),
        ("empty.txt", Vec::new()),
        ("notes (2).txt", "こんにちは、世界\n".repeat(50).into_bytes()),
    ];
    let entries: Vec<Entry> = files.iter().map(|(name, content)| small_entry(name, content)).collect();
    let layout = Layout::new(&entries);
    let archive = dir.path().join("bundle.zip");
    write_archive(&archive, &layout, |i| Some(files[i].1.clone()));
    assert_eq!(fs::metadata(&archive).unwrap().len(), layout.len());

    let expected: Vec<(String, u64)> = files.iter().map(|(n, c)| ((*n).to_owned(), c.len() as u64)).collect();
    for (tool, seen) in names_and_sizes_each_tool_sees(&archive) {
        assert_eq!(seen, expected, "{tool} lists the entries");
    }
    let a = archive.to_str().unwrap();
    let out = |tool: &str| dir.path().join(tool);
    let extract_script = "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])";
    run("python3", &["-c", extract_script, a, out("python").to_str().unwrap()]);
    run("unzip", &["-q", a, "-d", out("unzip").to_str().unwrap()]);
    run("7z", &["x", "-y", &format!("-o{}", out("7z").display()), a]);
    fs::create_dir(out("bsdtar")).unwrap();
    run("bsdtar", &["-xf", a, "-C", out("bsdtar").to_str().unwrap()]);
    for tool in ["python", "unzip", "7z", "bsdtar"] {
        for (name, content) in &files {
            assert_eq!(&fs::read(out(tool).join(name)).unwrap(), content, "{tool} extracts {name}");
        }
    }
}

#[test]
fn an_archive_past_four_gibibytes_uses_zip64_and_every_tool_reads_it() {
    // A 4.5 GiB file of zeros (a hole in a sparse archive) puts the next entry's header past 4 GiB.
    let big_size: u64 = (9 << 30) / 2;
    let zeros = vec![0u8; 1 << 20];
    let mut crc = crc32fast::Hasher::new();
    for _ in 0..big_size >> 20 {
        crc.update(&zeros);
    }
    let small = b"after the big one".to_vec();
    let entries = [entry("大きい.bin", big_size, crc.finalize(), "0".repeat(64)), small_entry("small.txt", &small)];
    let layout = Layout::new(&entries);
    assert!(layout.len() > 1 << 32, "the second entry starts past 4 GiB");
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("big.zip");
    write_archive(&archive, &layout, |i| (i == 1).then(|| small.clone()));

    let expected = vec![("大きい.bin".to_owned(), big_size), ("small.txt".to_owned(), small.len() as u64)];
    for (tool, seen) in names_and_sizes_each_tool_sees(&archive) {
        assert_eq!(seen, expected, "{tool} lists the entries");
    }
    let a = archive.to_str().unwrap();
    let script = "import sys, zipfile\nsys.stdout.write(zipfile.ZipFile(sys.argv[1]).read('small.txt').decode())";
    assert_eq!(run("python3", &["-c", script, a]), "after the big one");
    assert_eq!(run("unzip", &["-p", a, "small.txt"]), "after the big one");
    assert_eq!(run("7z", &["e", "-so", a, "small.txt"]), "after the big one");
    assert_eq!(run("bsdtar", &["-xOf", a, "small.txt"]), "after the big one");
}

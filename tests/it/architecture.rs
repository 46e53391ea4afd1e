//! The module graph points one way. Every `crate::…` path under `src/` is an edge between
//! top-level modules (a module's submodules count as the module); the graph must have no
//! cycle, nothing may import the command layer, and only the command layer imports `cli`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that sit on top: they may import everything, nothing imports them.
const COMMAND_LAYER: &str = "commands";

type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/chat/history.rs` → `chat`; `src/lib.rs` and `src/main.rs` are the crate root.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

/// The top-level modules a source text names through `crate::`, grouped imports included
/// (`use crate::{a, b::c}`). Comments are skipped: doc links are not dependencies.
fn imported_modules(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = item.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.insert(name.to_owned());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Module → (imported module → one file that imports it, for the message).
fn module_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(&src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let Some(from) = top_module(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let edges = graph.entry(from.clone()).or_default();
        for to in imported_modules(&without_test_modules(&text)) {
            if to != from && modules.contains(&to) {
                let shown = file
                    .strip_prefix(&src)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                edges.entry(to).or_insert(shown);
            }
        }
    }
    graph
}

/// The text with its `#[cfg(test)] mod … { … }` blocks blanked: a unit test may drive the
/// whole pipeline to exercise its module (the results cache's build test checks a real
/// template), which is no dependency of the module itself.
fn without_test_modules(text: &str) -> String {
    let code = code_only(text);
    let mut bytes = text.as_bytes().to_vec();
    for range in test_modules(&code) {
        for b in &mut bytes[range] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One cycle, as the modules along it with the file behind each edge, if there is any.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        state: &mut BTreeMap<String, State>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), State::Open);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            match state.get(next.as_str()) {
                Some(State::Open) => {
                    let start = path.iter().position(|m| m == next).expect("on the path");
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(State::Done) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, path) {
                        return Some(cycle);
                    }
                }
            }
        }
        path.pop();
        state.insert(node.to_owned(), State::Done);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            if let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

fn describe(cycle: &[String], graph: &Graph) -> String {
    cycle
        .windows(2)
        .map(|pair| {
            format!(
                "{} → {} (in src/{})",
                pair[0], pair[1], graph[&pair[0]][&pair[1]]
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle {}:\n  {}",
            cycle.join(" → "),
            describe(&cycle, &graph)
        );
    }
}

#[test]
fn nothing_imports_the_command_layer() {
    let graph = module_graph();
    assert!(
        graph.contains_key(COMMAND_LAYER),
        "src/{COMMAND_LAYER}/ exists"
    );
    let importers: Vec<String> = graph
        .iter()
        .filter_map(|(from, edges)| {
            edges
                .get(COMMAND_LAYER)
                .map(|f| format!("{from} (src/{f})"))
        })
        .collect();
    assert!(
        importers.is_empty(),
        "{COMMAND_LAYER} is imported by {importers:?}"
    );
}

#[test]
fn only_the_command_layer_reads_cli_arguments() {
    let graph = module_graph();
    let importers: Vec<String> = graph
        .iter()
        .filter(|(from, _)| from.as_str() != COMMAND_LAYER)
        .filter_map(|(from, edges)| edges.get("cli").map(|f| format!("{from} (src/{f})")))
        .collect();
    assert!(
        importers.is_empty(),
        "library modules import cli: {importers:?}"
    );
}

#[test]
fn the_checker_finds_a_planted_cycle() {
    let mut graph = Graph::new();
    graph
        .entry("a".into())
        .or_default()
        .insert("b".into(), "a.rs".into());
    graph
        .entry("b".into())
        .or_default()
        .insert("c".into(), "b.rs".into());
    graph
        .entry("c".into())
        .or_default()
        .insert("a".into(), "c/x.rs".into());
    let cycle = find_cycle(&graph).expect("a → b → c → a");
    assert_eq!(cycle, ["a", "b", "c", "a"]);
    assert!(describe(&cycle, &graph).contains("c → a (in src/c/x.rs)"));
    graph.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn grouped_and_inline_paths_are_edges() {
    let text = "use crate::{analyse,\n    render::Render};\nlet x = crate::fmt::thousands(1);\n// crate::report is a comment\nmy_crate::skip";
    let found: Vec<String> = imported_modules(text).into_iter().collect();
    assert_eq!(found, ["analyse", "fmt", "render"]);
}

// ---------------------------------------------------------------------------------------
// Inside a module: the files of one module (`src/rules/*.rs`, `src/measure/fleet/*.rs`) form
// a graph of their own, through `super::x` and `crate::m::x` paths, and it has no circle
// either. A test module's imports are not the module's design, so they do not count.

/// Source text with comments, string, char and byte literals blanked (same length, newlines
/// kept), so that braces and paths are only the code's.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, range: std::ops::Range<usize>| {
        for b in &mut out[range] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let after_ident = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| i + n);
            blank(&mut out, i..end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < bytes.len() && depth > 0 {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i..j);
            i = j;
        } else if !after_ident
            && (rest.starts_with(b"r#") || rest.starts_with(b"r\"") || rest.starts_with(b"br"))
            && {
                let start = if rest[0] == b'b' { 2 } else { 1 };
                let hashes = rest[start..].iter().take_while(|&&b| b == b'#').count();
                rest.get(start + hashes) == Some(&b'"')
            }
        {
            let start = if rest[0] == b'b' { 2 } else { 1 };
            let hashes = rest[start..].iter().take_while(|&&b| b == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + start + hashes + 1;
            let end = bytes[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(bytes.len(), |n| body + n + close.len());
            blank(&mut out, i..end);
            i = end;
        } else if rest[0] == b'"' || (rest.starts_with(b"b\"") && !after_ident) {
            let mut j = i + if rest[0] == b'b' { 2 } else { 1 };
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(bytes.len());
            blank(&mut out, i..end);
            i = end;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}', 'é'), else a lifetime or label.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map(|n| i + 2 + n + 1)
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + width) == Some(&b'\'')).then_some(i + 1 + width + 1)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i..end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

/// Where the block that opens at byte `open` (a `{`) closes, in blanked code.
fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, b) in code.bytes().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The `#[cfg(test)] mod NAME { … }` blocks of blanked code, as byte ranges.
fn test_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|n| from + n) {
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        let item = code.len() - after.len();
        let is_mod = after
            .strip_prefix("pub ")
            .unwrap_or(after)
            .strip_prefix("mod ")
            .is_some_and(|rest| {
                let rest = rest.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
                rest.trim_start().starts_with('{')
            });
        if is_mod {
            let open = item + code[item..].find('{').expect("checked above");
            let end = block_end(code, open);
            found.push(at..end);
            from = end;
        } else {
            from = item;
        }
    }
    found
}

/// The line of the first code after a file's first test module that is not a test module
/// itself, if there is any.
fn code_after_test_module(text: &str) -> Option<usize> {
    let code = code_only(text);
    let modules = test_modules(&code);
    let first = modules.first()?;
    let mut at = first.end;
    for module in &modules[1..] {
        if !code[at..module.start].trim().is_empty() {
            break;
        }
        at = module.end;
    }
    let rest = &code[at..];
    let offset = at + (rest.len() - rest.trim_start().len());
    (offset < code.len()).then(|| code[..offset].matches('\n').count() + 1)
}

/// `rules/breakpoint.rs` → `["rules", "breakpoint"]`; `rules/mod.rs` → `["rules"]`;
/// `lib.rs` → `[]`.
fn module_path(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every path a file names through `crate::`, `super::` or `self::`, made absolute from the
/// file's module, with `use` groups expanded (`use super::{a::X, b}` names `…::a::X` and
/// `…::b`).
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    fn ident(code: &str, at: usize) -> (&str, usize) {
        let rest = &code[at..];
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (&rest[..len], at + len)
    }
    fn skip_space(code: &str, at: usize) -> usize {
        let rest = &code[at..];
        at + (rest.len() - rest.trim_start().len())
    }
    /// A use tree after `prefix::`: `a::b`, `a::{b, c::d}`, `*`.
    fn tree(code: &str, mut at: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix;
        loop {
            at = skip_space(code, at);
            if code[at..].starts_with('{') {
                at += 1;
                loop {
                    at = skip_space(code, at);
                    if code[at..].starts_with('}') || at >= code.len() {
                        return (at + 1).min(code.len());
                    }
                    let (word, end) = ident(code, at);
                    if word == "self" {
                        out.push(path.clone());
                        at = end;
                    } else {
                        at = tree(code, at, path.clone(), out);
                    }
                    at = skip_space(code, at);
                    if code[at..].starts_with(',') {
                        at += 1;
                    }
                }
            }
            let (word, end) = ident(code, at);
            if word.is_empty() {
                out.push(path);
                return at;
            }
            path.push(word.to_owned());
            at = skip_space(code, end);
            if code[at..].starts_with("::") {
                at += 2;
            } else {
                out.push(path);
                return at;
            }
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let (word, end) = ident(code, at);
        if word.is_empty() {
            at += code[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let preceded = code[..at].trim_end().ends_with("::");
        let base = match word {
            _ if preceded || !code[end..].starts_with("::") => None,
            "crate" => Some(Vec::new()),
            "self" => Some(module.to_vec()),
            "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
            _ => None,
        };
        let Some(mut base) = base else {
            at = end;
            continue;
        };
        let mut next = end + 2;
        // `super::super::x`
        while code[next..].starts_with("super::") {
            base.pop();
            next += "super::".len();
        }
        at = tree(code, next, base, &mut out);
    }
    out
}

/// Module (`rules`, `measure::fleet`) → its files' graph: file → sibling file it names.
fn in_module_graphs(files: &[(String, String)]) -> BTreeMap<String, Graph> {
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .flat_map(|(relative, _)| {
            let path = module_path(relative);
            (0..=path.len()).map(move |n| path[..n].to_vec())
        })
        .collect();
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for (relative, text) in files {
        let module = module_path(relative);
        let mut code = code_only(text);
        for tests in test_modules(&code).into_iter().rev() {
            code.replace_range(tests, "");
        }
        for target in named_paths(&code, &module) {
            let shared = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if shared == 0 || shared >= module.len() || shared >= target.len() {
                continue;
            }
            let (from, to) = (&module[shared], &target[shared]);
            if from == to || !modules.contains(&target[..=shared]) {
                continue;
            }
            graphs
                .entry(module[..shared].join("::"))
                .or_default()
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_insert_with(|| relative.clone());
        }
    }
    graphs
}

fn source_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .iter()
        .map(|file| {
            let relative = file
                .strip_prefix(&src)
                .expect("under src/")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(file).expect("a readable source file");
            (relative, text)
        })
        .collect()
}

#[test]
fn no_module_has_a_circle_between_its_files() {
    let graphs = in_module_graphs(&source_files());
    assert!(
        graphs.contains_key("rules") && graphs.contains_key("measure::fleet"),
        "the in-module graphs are built: {:?}",
        graphs.keys().collect::<Vec<_>>()
    );
    let circles: Vec<String> = graphs
        .iter()
        .filter_map(|(module, graph)| {
            let cycle = find_cycle(graph)?;
            Some(format!(
                "in {module}: {}:\n  {}",
                cycle.join(" → "),
                describe(&cycle, graph)
            ))
        })
        .collect();
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

#[test]
fn the_checker_finds_a_planted_circle_inside_a_module() {
    let file = |path: &str, text: &str| (path.to_owned(), text.to_owned());
    let mut files = vec![
        file("lib.rs", "pub mod rules;"),
        file("rules/mod.rs", "mod a;\nmod b;\nmod c;\nuse a::Thing;"),
        file("rules/a.rs", "use super::{b::X, Local};\n"),
        file(
            "rules/b.rs",
            "// crate::rules::a is only a comment\nuse crate::rules::{c::{self, Y}, fields};\nconst S: &str = \"super::a::fake\";",
        ),
        file(
            "rules/c.rs",
            "pub fn f() -> u8 { super::super::rules::a::g() }\n",
        ),
    ];
    let graphs = in_module_graphs(&files);
    let cycle = find_cycle(&graphs["rules"]).expect("a → b → c → a");
    assert_eq!(cycle, ["a", "b", "c", "a"]);
    assert!(describe(&cycle, &graphs["rules"]).contains("c → a (in src/rules/c.rs)"));
    // The same edge from c's test module is no circle.
    files[4] = file(
        "rules/c.rs",
        "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::super::a::g;\n}\n",
    );
    let graphs = in_module_graphs(&files);
    assert_eq!(find_cycle(&graphs["rules"]), None);
    assert_eq!(graphs["rules"]["a"].keys().collect::<Vec<_>>(), ["b"]);
}

#[test]
fn test_modules_sit_at_the_end_of_their_files() {
    let late: Vec<String> = source_files()
        .iter()
        .filter_map(|(relative, text)| {
            code_after_test_module(text)
                .map(|line| format!("src/{relative}:{line}: code after the test module"))
        })
        .collect();
    assert!(late.is_empty(), "{}", late.join("\n"));
}

#[test]
fn the_checker_finds_code_after_a_test_module() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    const B: &str = \"}\";\n    const C: char = '}';\n    fn f<'a>(x: &'a str) -> &'a str { x }\n}\n\nfn late() {}\n";
    assert_eq!(code_after_test_module(text), Some(9));
    let end = "fn a() {}\n#[cfg(test)]\nmod tests {\n    const B: &str = r#\"}\"#;\n}\n// a comment\n#[cfg(test)]\nmod more_tests {}\n";
    assert_eq!(code_after_test_module(end), None);
    assert_eq!(
        code_after_test_module("#[cfg(test)]\nfn helper() {}\nfn x() {}"),
        None
    );
}

#[test]
fn a_test_module_is_not_an_edge_of_the_module_graph() {
    let text = "use crate::a::f;\n#[cfg(test)]\nmod tests {\n    use crate::b::g;\n}\n";
    let imported = imported_modules(&without_test_modules(text));
    assert_eq!(imported, BTreeSet::from(["a".to_owned()]));
}

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
        for to in imported_modules(&text) {
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

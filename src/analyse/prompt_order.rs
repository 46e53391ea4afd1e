//! A request-body render with the fields that vary between requests and are no part of the
//! prompt (`prompt_cache_key`, `metadata`, `user`, …) moved after the prompt's fields
//! (`tools`, `system`, `messages`, …). A hosted API caches the prompt it builds from those
//! fields, not the JSON text: a per-request key written before `messages` is no break of
//! the cached prefix, so the rules that read the render's text measure it this way.
//! PL012/PL013 read the same fields from the body either way.

use super::request_body;
use crate::render::instrument::{MarkEvent, SourceMap};
use crate::render::Render;
use std::ops::Range;

/// The top-level fields the APIs build the cached prompt from, and a top-level
/// `cache_control`, which stays where the template writes it.
const PROMPT_FIELDS: [&str; 6] = [
    "tools",
    "system",
    "instructions",
    "messages",
    "input",
    "cache_control",
];

/// One top-level member of a body: its key and its bytes (key through value).
struct Member {
    key: String,
    span: Range<usize>,
    value: Range<usize>,
}

/// `renders` with each varying non-prompt field that stands before a prompt field moved
/// right after the last prompt field, source maps following their bytes. Unchanged unless
/// every render is a request body whose members each hold their own template output.
pub fn prompt_fields_first(renders: Vec<Render>) -> Vec<Render> {
    reordered(&renders).unwrap_or(renders)
}

fn reordered(renders: &[Render]) -> Option<Vec<Render>> {
    // A cheap test first: most templates are prose.
    if renders.len() < 2
        || !renders.iter().all(|r| {
            r.text.trim_start().starts_with('{')
                && (r.text.contains("\"messages\"") || r.text.contains("\"input\""))
        })
    {
        return None;
    }
    let bodies: Vec<Vec<Member>> = renders
        .iter()
        .map(|r| members(&r.text))
        .collect::<Option<_>>()?;
    let value_of = |i: usize, key: &str| {
        bodies[i]
            .iter()
            .find(|m| m.key == key)
            .map(|m| &renders[i].text[m.value.clone()])
    };
    let varies = |key: &str| (1..renders.len()).any(|i| value_of(i, key) != value_of(0, key));
    let mut changed = false;
    let mut out = Vec::with_capacity(renders.len());
    for (render, body) in renders.iter().zip(&bodies) {
        let last_prompt = body
            .iter()
            .rposition(|m| PROMPT_FIELDS.contains(&m.key.as_str()))?;
        let moved = |m: &Member| !PROMPT_FIELDS.contains(&m.key.as_str()) && varies(&m.key);
        let head = 0..=last_prompt;
        let order: Vec<usize> = head
            .clone()
            .filter(|&i| !moved(&body[i]))
            .chain(head.filter(|&i| moved(&body[i])))
            .chain(last_prompt + 1..body.len())
            .collect();
        if order.iter().enumerate().all(|(at, &i)| at == i) {
            out.push(render.clone());
            continue;
        }
        changed = true;
        out.push(permuted(render, body, &order)?);
    }
    changed.then_some(out)
}

/// The top-level members of a JSON object text; `None` when it is not one.
fn members(text: &str) -> Option<Vec<Member>> {
    let root = request_body::parse(text)?;
    let fields = root.object()?;
    Some(
        fields
            .iter()
            .map(|f| Member {
                key: f.key.clone(),
                span: f.key_span.start..f.value.span.end,
                value: f.value.span.clone(),
            })
            .collect(),
    )
}

/// `render` with its members in `order`, the separators between them where they were.
/// `None` when an expression's output spans more than one member or separator: moving
/// part of it would tear its source map apart.
fn permuted(render: &Render, body: &[Member], order: &[usize]) -> Option<Render> {
    let text = render.text.as_str();
    // The old segments in text order: before the first member, then each member and the
    // separator after it (the last one's reaching the end).
    let mut segments: Vec<Range<usize>> = Vec::with_capacity(2 * body.len() + 1);
    segments.push(0..body[0].span.start);
    for (i, member) in body.iter().enumerate() {
        let next = body.get(i + 1).map_or(text.len(), |m| m.span.start);
        segments.push(member.span.clone());
        segments.push(member.span.end..next);
    }
    // The new order of those segments: members permuted, separators in place.
    let mut new_order = vec![0];
    for (slot, &member) in order.iter().enumerate() {
        new_order.push(1 + 2 * member);
        new_order.push(2 + 2 * slot);
    }
    let mut new_text = String::with_capacity(text.len());
    let mut events = Vec::new();
    let mut stand_ins = Vec::new();
    for &s in &new_order {
        let range = segments[s].clone();
        let start = new_text.len();
        new_text.push_str(&text[range.clone()]);
        if let Some(map) = &render.map {
            events.extend(segment_events(map, &range, start)?);
            // Stand-in output moves with its bytes.
            stand_ins.extend(map.stand_ins.iter().filter_map(|r| {
                let (from, to) = (r.start.max(range.start), r.end.min(range.end));
                (from < to).then(|| from - range.start + start..to - range.start + start)
            }));
        }
    }
    Some(Render {
        text: new_text,
        map: render.map.as_ref().map(|_| SourceMap {
            events,
            stand_ins: crate::render::stand_ins::merge(stand_ins),
        }),
    })
}

/// The events of the old bytes `range`, moved to start at `start`: a close at its end is its
/// own, an open or a text mark there the next segment's. The text run that covers the
/// segment's first byte is marked again at its start. `None` when an expression opened or
/// closed here is closed or opened outside it.
fn segment_events(
    map: &SourceMap,
    range: &Range<usize>,
    start: usize,
) -> Option<Vec<(usize, MarkEvent)>> {
    let own = |&&(at, event): &&(usize, MarkEvent)| match event {
        MarkEvent::Close(_) => at > range.start && at <= range.end,
        _ => at >= range.start && at < range.end,
    };
    let mut events = Vec::new();
    let first_own = map.events.iter().find(own).map(|&(at, _)| at);
    if first_own != Some(range.start) {
        if let Some((MarkEvent::Text(id), _)) = map.origin_at(range.start) {
            events.push((start, MarkEvent::Text(id)));
        }
    }
    let mut open = Vec::new();
    for &(at, event) in map.events.iter().filter(own) {
        match event {
            MarkEvent::Open(id) => open.push(id),
            MarkEvent::Close(id) => {
                if open.pop() != Some(id) {
                    return None;
                }
            }
            MarkEvent::Text(_) => {}
        }
        events.push((at - range.start + start, event));
    }
    open.is_empty().then_some(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, events: Vec<(usize, MarkEvent)>) -> Render {
        Render {
            text: text.to_owned(),
            map: Some(SourceMap {
                events,
                stand_ins: Vec::new(),
            }),
        }
    }

    /// `{"model": "m", "prompt_cache_key": "{{ key }}", "messages": [...]}` with the key's
    /// expression (origin 7) open around its value, template text (origin 1) elsewhere.
    fn body(key: &str) -> Render {
        let text = format!(
            "{{\"model\": \"m\", \"prompt_cache_key\": \"{key}\", \"messages\": [{{\"role\": \"user\", \"content\": \"Hi\"}}]}}"
        );
        let open = text.find(key).unwrap();
        let events = vec![
            (0, MarkEvent::Text(1)),
            (open, MarkEvent::Open(7)),
            (open + key.len(), MarkEvent::Close(7)),
            (open + key.len(), MarkEvent::Text(2)),
        ];
        render(&text, events)
    }

    #[test]
    fn a_varying_key_before_the_messages_moves_after_them_with_its_source_map() {
        let moved = prompt_fields_first(vec![body("aaa"), body("bbbbb")]);
        assert_eq!(
            moved[0].text,
            "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"prompt_cache_key\": \"aaa\"}"
        );
        // The renders now share everything up to the key.
        let key_at = moved[1].text.find("bbbbb").unwrap();
        assert_eq!(moved[0].text[..key_at], moved[1].text[..key_at]);
        // The key's bytes still come from its expression, the messages from template text.
        let map = moved[1].map.as_ref().unwrap();
        assert_eq!(map.expression_ranges(7), vec![key_at..key_at + 5]);
        let messages = moved[1].text.find("\"messages\"").unwrap();
        assert!(matches!(
            map.origin_at(messages),
            Some((MarkEvent::Text(2), _))
        ));
    }

    #[test]
    fn constant_fields_and_plain_text_stay_as_rendered() {
        let same = prompt_fields_first(vec![body("aaa"), body("aaa")]);
        assert_eq!(same[0].text, body("aaa").text);
        let prose = render("Hello {\"messages\"", Vec::new());
        let kept = prompt_fields_first(vec![prose.clone(), prose]);
        assert_eq!(kept[0].text, "Hello {\"messages\"");
    }

    #[test]
    fn an_expression_across_members_keeps_the_render_as_it_is() {
        let mut a = body("aaa");
        let mut b = body("bbbbb");
        for r in [&mut a, &mut b] {
            let end = r.text.len();
            let map = r.map.as_mut().unwrap();
            map.events.insert(0, (0, MarkEvent::Open(9)));
            map.events.push((end, MarkEvent::Close(9)));
        }
        let kept = prompt_fields_first(vec![a.clone(), b]);
        assert_eq!(kept[0].text, a.text);
    }
}

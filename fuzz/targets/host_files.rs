//! Arbitrary bytes as every host file (YAML, JSON, TOML, Python, a `.md` prompt) and as a
//! text whose format is detected: errors are fine, panics are not, and every template's
//! host map stays inside the host.

use prefixlint::host::{self, EmbeddedTemplate};
use prefixlint::{formats, source};
use std::path::Path;

pub fn run(data: &[u8]) {
    let Ok(text) = source::decode_text(data, "fuzz") else {
        return;
    };
    let inside = |templates: &[EmbeddedTemplate]| {
        for template in templates {
            for segment in template.map.segments() {
                assert!(
                    segment.host_start + segment.host_len <= text.len(),
                    "{segment:?} runs past the host"
                );
            }
            assert!(template.map.host_offset(template.text.len()) <= text.len());
        }
    };
    let yaml = host::yaml::Recognition::ZERO_CONFIG;
    if let Ok(found) = host::yaml::extract_all(Path::new("p.yaml"), &text, yaml) {
        inside(&found.templates);
    }
    if let Ok(found) = host::json::extract(Path::new("p.json"), &text, true, &[]) {
        inside(&found.templates);
    }
    if let Ok(found) = host::toml::extract(Path::new("p.toml"), &text, true, &[]) {
        inside(&found.templates);
    }
    if let Ok(found) = host::python::extract_all(&text) {
        inside(&found.templates);
    }
    inside(&host::text::extract(Path::new("prompts/p.md"), &text, None, true).templates);
    let _ = formats::detect::from_content(&text);
}

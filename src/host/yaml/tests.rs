use super::*;
use crate::formats::TemplateFormat;
use std::path::Path;

fn templates(path: &str, source: &str) -> Vec<EmbeddedTemplate> {
    extract(Path::new(path), source, Recognition::ZERO_CONFIG).unwrap()
}

fn keys(path: &str, source: &str) -> Vec<String> {
    templates(path, source).into_iter().map(|t| t.key).collect()
}

/// Every text byte copied from the host is the same byte there.
fn assert_maps_back(source: &str, template: &EmbeddedTemplate) {
    for segment in template.map.segments() {
        if segment.text_len == segment.host_len {
            assert_eq!(
                &source[segment.host_start..segment.host_start + segment.host_len],
                &template.text[segment.text_start..segment.text_start + segment.text_len],
                "{}",
                template.key
            );
        }
    }
}

#[test]
fn agent_templates_are_found_by_key_with_exact_positions() {
    let source = "agent:\n  templates:\n    system_template: |-\n      You are a careful engineer.\n      Commands: {{ command_docs }}\n    instance_template: \"Fix this: {{ problem_statement }}\\nThen stop.\"\n  model: gpt\n";
    let found = templates("agent.yaml", source);
    let keys: Vec<&str> = found.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "agent.templates.system_template",
            "agent.templates.instance_template"
        ]
    );
    assert_eq!(found[0].anchor_line, 3);
    assert_eq!(
        found[0].text,
        "You are a careful engineer.\nCommands: {{ command_docs }}"
    );
    let at = found[0].text.find("{{ command_docs").unwrap();
    let host = found[0].map.host_offset(at);
    assert!(source[host..].starts_with("{{ command_docs"));
    assert_eq!(
        found[1].text,
        "Fix this: {{ problem_statement }}\nThen stop."
    );
    let at = found[1].text.find("Then").unwrap();
    assert!(source[found[1].map.host_offset(at)..].starts_with("Then stop."));
    for template in &found {
        assert_maps_back(source, template);
    }
}

#[test]
fn guardrail_prompts_and_catalog_entries_are_found() {
    let guardrails = "prompts:\n  - task: general\n    models: [openai]\n    content: |\n      {{ general_instructions }}\n      User: {{ user_input }}\n  - task: check\n    messages:\n      - type: system\n        content: \"Check {{ text }}\"\n";
    assert_eq!(
        keys("rails.yml", guardrails),
        ["prompts[0].content", "prompts[1].messages[0].content"]
    );
    let catalog = "dataset: x\ntemplates:\n  0a1b: !Template\n    answer_choices: yes ||| no\n    jinja: \"{{ premise }} Question: {{ hypothesis }} ||| {{ answer_choices[label] }}\"\n    name: gpt3\n";
    assert_eq!(keys("templates.yaml", catalog), ["templates.0a1b.jinja"]);
}

#[test]
fn smolagents_prompt_files_count_every_jinja_value() {
    let source = "system_prompt: |-\n  You are an expert. {%- for tool in tools.values() %} {{ tool.name }}{% endfor %}\nplanning:\n  initial_plan: |-\n    Task: {{ task }}\n  update_plan_pre_messages: |-\n    Again {{ task }}\nfinal_answer:\n  pre_messages: \"An agent tried: {{ task }}\"\n";
    assert_eq!(
        keys("code_agent.yaml", source),
        [
            "system_prompt",
            "planning.initial_plan",
            "planning.update_plan_pre_messages",
            "final_answer.pre_messages"
        ]
    );
}

#[test]
fn template_format_says_which_language_a_value_is_in() {
    let jinja = "_type: prompt\ninput_variables: [q]\ntemplate_format: jinja2\ntemplate: \"Answer {{ q }}\"\n";
    assert_eq!(keys("prompt.yaml", jinja), ["template"]);
    let fstring = "_type: prompt\ntemplate_format: f-string\ntemplate: \"Answer {{q}} {q}\"\n";
    let formats = |path: &str, source: &str| -> Vec<(String, TemplateFormat)> {
        templates(path, source)
            .into_iter()
            .map(|t| (t.key, t.format))
            .collect()
    };
    assert_eq!(
        formats("prompt.yaml", fstring),
        [("template".to_owned(), TemplateFormat::Format)]
    );
    let kernel = "name: Chat\ntemplate_format: handlebars\ntemplate: \"{{#each messages}}{{content}}{{/each}}\"\n";
    assert_eq!(
        formats("chat.yaml", kernel),
        [("template".to_owned(), TemplateFormat::Handlebars)]
    );
    // Semantic Kernel's prompt YAML is in its own syntax unless it says otherwise.
    let sk = "name: Summarize\ntemplate: |\n  Summarize {{$input}} for {{$audience}}.\ninput_variables:\n  - name: input\n";
    assert_eq!(
        formats("summarize.yaml", sk),
        [("template".to_owned(), TemplateFormat::SemanticKernel)]
    );
    // LangChain's saved prompt without a format is in its `{var}` default.
    let saved = "_type: prompt\ninput_variables: [q]\ntemplate: Answer {q}\n";
    assert_eq!(
        formats("saved.yaml", saved),
        [("template".to_owned(), TemplateFormat::Format)]
    );
    // A format no renderer knows is reported, not passed.
    let erb = "name: x\ntemplate_format: erb\ntemplate: \"<%= x %>\"\n";
    let all = extract_all(Path::new("x.yaml"), erb, Recognition::ZERO_CONFIG).unwrap();
    assert!(all.templates.is_empty());
    assert_eq!(all.unchecked.len(), 1);
    assert_eq!(all.unchecked[0].line, 3);
}

#[test]
fn non_prompt_yaml_stays_quiet() {
    let workflow = "on: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo \"${{ github.sha }}\"\n        name: \"{{ not a prompt }}\"\n";
    assert!(keys(".github/workflows/ci.yml", workflow).is_empty());
    assert!(keys("ci.yml", workflow).is_empty());
    let playbook = "- hosts: all\n  tasks:\n    - name: write the prompt config\n      copy:\n        content: \"{{ message }} for {{ inventory_hostname }}\"\n        dest: /etc/motd\n";
    assert!(keys("site.yml", playbook).is_empty());
    let role_vars = "nginx_template: \"{{ role_path }}/templates/nginx.conf.j2\"\n";
    assert!(keys("roles/web/defaults/main.yml", role_vars).is_empty());
    let manifest = "apiVersion: v1\nkind: ConfigMap\ndata:\n  prompt: \"{{ .Values.prompt }}\"\n  template: \"{{ value }}\"\n";
    assert!(keys("cm.yaml", manifest).is_empty());
    let compose =
        "services:\n  web:\n    image: nginx\n    environment:\n      MESSAGE: \"{{ message }}\"\n";
    assert!(keys("docker-compose.yml", compose).is_empty());
    assert!(keys("stack.yml", compose).is_empty());
    let settings = "name: \"{{ project }}\"\nversion: 1\n";
    assert!(keys("settings.yaml", settings).is_empty());
}

#[test]
fn go_templates_and_github_expressions_are_not_jinja() {
    assert!(!has_jinja("${{ github.sha }}"));
    assert!(!has_jinja("{{ .Values.image }}"));
    assert!(!has_jinja("{{- include \"x\" . }}") || has_jinja("{{- include \"x\" . }}"));
    assert!(has_jinja("Hello {{ name }}"));
    assert!(has_jinja("{% for x in xs %}{{ x }}{% endfor %}"));
    assert!(!has_jinja("plain text"));
}

#[test]
fn prose_counts_as_a_prompt() {
    let source = "notes:\n  intro: \"You are a helpful assistant. Read the document below carefully and answer the user's question about it: {{ question }}\"\n  short: \"{{ x }}\"\n";
    assert_eq!(keys("misc.yaml", source), ["notes.intro"]);
}

#[test]
fn config_keys_name_templates_and_recognition_can_be_off() {
    let source = "steps:\n  - say: \"Hi {{ name }}\"\n    other: 1\nprompt: \"{{ x }} is here\"\n";
    let keys_named = ["steps[*].say".to_owned()];
    let found = extract(
        Path::new("flow.yaml"),
        source,
        Recognition {
            recognize: false,
            keys: &keys_named,
        },
    )
    .unwrap();
    let names: Vec<&str> = found.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(names, ["steps[0].say"]);
    let off = extract(
        Path::new("flow.yaml"),
        source,
        Recognition {
            recognize: false,
            keys: &[],
        },
    )
    .unwrap();
    assert!(off.is_empty());
}

#[test]
fn non_ascii_hosts_map_bytes_not_characters() {
    let source = "título: ñ\nprompt: \"Olá {{ nome }}, tudo bem?\"\n";
    let found = templates("pt.yaml", source);
    assert_eq!(found.len(), 1);
    let at = found[0].text.find("{{").unwrap();
    assert!(source[found[0].map.host_offset(at)..].starts_with("{{ nome }}"));
    assert_maps_back(source, &found[0]);
}

#[test]
fn a_syntax_error_has_a_place() {
    let error = parse("a: [unclosed\nb: 1\n").unwrap_err();
    assert!(!error.message.is_empty());
}

#[test]
fn lists_of_agent_configs_are_found_too() {
    let source = "agent_configs:\n  - name: planner\n    templates:\n      next_step: \"Observation: {{ observation }}\"\n  - name: coder\n    templates:\n      system: \"You write code for {{ repo }}\"\n";
    assert_eq!(
        keys("swe.yaml", source),
        [
            "agent_configs[0].templates.next_step",
            "agent_configs[1].templates.system"
        ]
    );
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    let deep = format!("{}x{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse(&deep).is_err());
    let block: String = (0..300)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    let error = parse(&block).unwrap_err();
    assert!(error.message.contains("nested deeper"), "{error:?}");
    let fine = format!(
        "prompt: {}\"{{{{ x }}}} here\"{}",
        "[".repeat(50),
        "]".repeat(50)
    );
    assert!(parse(&fine).is_ok());
}

#[test]
fn crewai_agents_and_tasks_are_var_templates_by_their_keys() {
    let agents = "researcher:\n  role: >\n    {topic} Senior Data Researcher\n  goal: >\n    Uncover cutting-edge developments in {topic}\n  backstory: >\n    You're a seasoned researcher with a knack for uncovering the latest\n    developments in {topic}.\n  llm: gpt-4o\n";
    let found = templates("config/agents.yaml", agents);
    let got: Vec<(&str, TemplateFormat, usize)> = found
        .iter()
        .map(|t| (t.key.as_str(), t.format, t.anchor_line))
        .collect();
    assert_eq!(
        got,
        [
            ("researcher.role", TemplateFormat::CrewAi, 2),
            ("researcher.goal", TemplateFormat::CrewAi, 4),
            ("researcher.backstory", TemplateFormat::CrewAi, 6),
        ]
    );
    let tasks = "research_task:\n  description: >\n    Conduct a thorough research about {topic}. The current year is {current_year}.\n  expected_output: >\n    A list with 10 bullet points\n  agent: researcher\n";
    let keys: Vec<String> = templates("tasks.yaml", tasks)
        .into_iter()
        .map(|t| t.key)
        .collect();
    assert_eq!(
        keys,
        ["research_task.description", "research_task.expected_output"]
    );
}

#[test]
fn var_values_need_a_prompt_place_and_prose() {
    let source = "logging:\n  format: \"{asctime} {levelname} {message}\"\nprompts:\n  summarize: \"Summarize {text}.\"\nagent:\n  system_prompt: \"You are a tutor. Explain the answer to the student's question below, step by step: {question}\"\n  greeting: \"Hello {name}, welcome back to the app. We missed you.\"\n";
    let keys: Vec<String> = templates("app.yaml", source)
        .into_iter()
        .map(|t| t.key)
        .collect();
    assert_eq!(keys, ["prompts.summarize", "agent.system_prompt"]);
    let openapi = "openapi: 3.0.0\npaths:\n  /users/{id}:\n    get:\n      description: \"Returns the user. You must pass the id below: {id}. Answer is JSON.\"\n";
    assert!(templates("api.yaml", openapi).is_empty());
}

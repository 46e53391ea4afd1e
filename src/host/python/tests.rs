use super::*;
use crate::formats::TemplateFormat;

/// Every template of a source, each checked against its host map.
fn found(source: &str) -> Vec<EmbeddedTemplate> {
    let templates = extract(source).unwrap_or_else(|error| panic!("{error}\n{source}"));
    for template in &templates {
        assert_maps_back(source, template);
    }
    templates
}

/// The one template of a source.
fn only(source: &str) -> EmbeddedTemplate {
    let mut templates = found(source);
    assert_eq!(templates.len(), 1, "{templates:#?}");
    templates.remove(0)
}

/// The Jinja templates of a source, by key and line.
fn keys(source: &str) -> Vec<(String, usize)> {
    jinja(source)
        .into_iter()
        .map(|template| (template.key, template.anchor_line))
        .collect()
}

/// The Jinja templates of a source (the others are checked in their own formats).
fn jinja(source: &str) -> Vec<EmbeddedTemplate> {
    found(source)
        .into_iter()
        .filter(|template| template.format == TemplateFormat::Jinja)
        .collect()
}

/// Every template of a source: key, line and format.
fn formats(source: &str) -> Vec<(String, usize, TemplateFormat)> {
    found(source)
        .into_iter()
        .map(|template| (template.key, template.anchor_line, template.format))
        .collect()
}

fn assert_maps_back(source: &str, template: &EmbeddedTemplate) {
    if let Some(why) = map_mismatch(source, template) {
        panic!("{why}");
    }
}

#[test]
fn the_prefilter_wants_an_expression_or_a_tag_opener() {
    assert!(may_hold_templates(b"X = '{{ y }}'"));
    assert!(may_hold_templates(b"X = '{% if y %}'"));
    assert!(!may_hold_templates(b"X = {'a': {1}}  # {# no #}"));
    assert!(!may_hold_templates(b"X = '{ {'"));
    assert!(!may_hold_templates(b"{"));
}

#[test]
fn a_file_without_template_markup_is_not_parsed() {
    // Not even valid Python, but nothing can be a template in it.
    assert_eq!(extract("def (:\n  x = '{'"), Ok(Vec::new()));
}

#[test]
fn a_module_constant_with_a_prompt_name() {
    let source = "import jinja2\n\nPLANNING_PROMPT = \"\"\"Plan for {{ task }}.\n{% for t in tools %}- {{ t }}\n{% endfor %}\"\"\"\n";
    let template = only(source);
    assert_eq!(template.kind, HostKind::Python);
    assert_eq!(template.key, "PLANNING_PROMPT");
    assert_eq!(template.anchor_line, 3);
    assert_eq!(
        template.text,
        "Plan for {{ task }}.\n{% for t in tools %}- {{ t }}\n{% endfor %}"
    );
    assert_eq!(
        template.map.host_offset(0),
        source.find("Plan").expect("in the source")
    );
}

#[test]
fn names_match_in_any_case_and_annotated() {
    let source = "system_prompt: str = '{{ a }}'\nUser_Template = '{{ b }}'\nprompt = '{{ c }}'\n_TEMPLATE = '{{ d }}'\nprompts = '{{ e }}'\nTEMPLATES_DIR = '{{ f }}'\n";
    assert_eq!(
        keys(source),
        [
            ("system_prompt".to_owned(), 1),
            ("User_Template".to_owned(), 2),
            ("prompt".to_owned(), 3),
            ("_TEMPLATE".to_owned(), 4),
        ]
    );
}

#[test]
fn class_attributes_are_keyed_by_their_classes() {
    let source = "class Agent:\n    SYSTEM_TEMPLATE = '{{ role }}'\n\n    class Planner:\n        plan_prompt = '{{ goal }}'\n\n    def run(self):\n        local_prompt = '{{ step }}'\n        self.user_template = '{{ user }}'\n";
    assert_eq!(
        keys(source),
        [
            ("Agent.SYSTEM_TEMPLATE".to_owned(), 2),
            ("Agent.Planner.plan_prompt".to_owned(), 5),
            ("local_prompt".to_owned(), 8),
            ("self.user_template".to_owned(), 9),
        ]
    );
}

#[test]
fn other_names_are_not_templates_by_themselves() {
    assert!(found("GREETING = '{{ name }}'\nconfig = {'prompt': '{{ x }}'}\n").is_empty());
}

#[test]
fn a_chained_assignment_is_one_template() {
    let template = only("A_PROMPT = B = '{{ x }}'\nT = Template(B)\n");
    assert_eq!((template.key.as_str(), template.anchor_line), ("B", 1));
}

#[test]
fn jinja_template_calls_inline() {
    let source = "import jinja2\nt = jinja2.Template('Hi {{ name }}')\nu = Template(source=\"{% if x %}y{% endif %}\")\n";
    let templates = found(source);
    assert_eq!(templates.len(), 2);
    assert_eq!(
        (
            templates[0].key.as_str(),
            templates[0].anchor_line,
            templates[0].text.as_str()
        ),
        ("jinja2.Template()", 2, "Hi {{ name }}")
    );
    assert_eq!(
        (templates[1].key.as_str(), templates[1].anchor_line),
        ("Template(source=)", 3)
    );
}

#[test]
fn string_template_is_not_jinja() {
    assert!(found("import string\nt = string.Template('{{ x }} $y')\n").is_empty());
    assert!(found("from string import Template\nt = Template('{{ x }} $y')\n").is_empty());
    assert!(found("from string import Template as T\nt = T('{{ x }}')\n").is_empty());
}

#[test]
fn from_string_on_an_environment_or_a_template_class() {
    let source = "env = Environment(loader=None)\na = Environment(autoescape=False).from_string('{{ a }}')\nb = env.from_string(\n    source='{{ b }}',\n)\nc = Template.from_string(content='{{ c }}')\n";
    assert_eq!(
        keys(source),
        [
            ("Environment().from_string()".to_owned(), 2),
            ("env.from_string(source=)".to_owned(), 3),
            ("Template.from_string(content=)".to_owned(), 6),
        ]
    );
}

#[test]
fn a_bound_name_is_reported_once_at_its_literal() {
    let source = "SYSTEM = '''You are {{ role }}.'''\n\ndef build(env):\n    return env.from_string(SYSTEM)\n";
    let template = only(source);
    assert_eq!((template.key.as_str(), template.anchor_line), ("SYSTEM", 1));
    assert_eq!(template.text, "You are {{ role }}.");
    assert_eq!(template.map.host_offset(0), 12);
}

#[test]
fn a_prompt_constant_used_by_a_call_is_reported_once_as_the_call_applies_it() {
    let source = "from textwrap import dedent\nQA_PROMPT = '''\n    Answer {{ question }}.\n    '''\nt = Template(dedent(QA_PROMPT).strip())\n";
    let template = only(source);
    assert_eq!(
        (template.key.as_str(), template.anchor_line),
        ("QA_PROMPT", 2)
    );
    assert_eq!(template.text, "Answer {{ question }}.");
}

#[test]
fn names_follow_names_to_the_literal() {
    let source = "BASE = '  {{ x }}  '\nALIAS = BASE\nSYSTEM_PROMPT = ALIAS.strip()\n";
    let template = only(source);
    assert_eq!((template.key.as_str(), template.anchor_line), ("BASE", 1));
    assert_eq!(template.text, "{{ x }}");
}

#[test]
fn class_attributes_resolve_through_self_and_the_class_name() {
    let source = "class Agent:\n    SYSTEM = '{{ a }}'\n    USER = '{{ b }}'\n    def run(self):\n        return Template(self.SYSTEM), Template(Agent.USER)\n";
    assert_eq!(
        keys(source),
        [("Agent.SYSTEM".to_owned(), 2), ("Agent.USER".to_owned(), 3)]
    );
}

#[test]
fn the_binding_before_the_call_is_the_one_it_reads() {
    let source = "X = '{{ first }}'\nt = Template(X)\nX = '{{ second }}'\n";
    let template = only(source);
    assert_eq!(
        (template.anchor_line, template.text.as_str()),
        (1, "{{ first }}")
    );
    let source = "X_PROMPT = '  {{ x }}  '\nX_PROMPT = X_PROMPT.strip()\n";
    let template = only(source);
    assert_eq!(
        (template.anchor_line, template.text.as_str()),
        (1, "{{ x }}")
    );
}

#[test]
fn cycles_of_names_end() {
    assert!(found("A = B\nB = A\nt = Template(A)\nC_PROMPT = C_PROMPT + '{{ x }}'\n").is_empty());
}

#[test]
fn langchain_prompt_templates_in_jinja2_format() {
    let source = "p = PromptTemplate(\n    input_variables=['q'],\n    template='Q: {{ q }}',\n    template_format='jinja2',\n)\nf = PromptTemplate(template='Q: {q} {{x}}')\ng = PromptTemplate.from_template('{{ a }}', template_format=\"jinja2\")\nh = SystemMessagePromptTemplate.from_template(template='{{ b }}', template_format='jinja2')\n";
    assert_eq!(
        keys(source),
        [
            ("PromptTemplate(template=)".to_owned(), 1),
            ("PromptTemplate.from_template()".to_owned(), 7),
            (
                "SystemMessagePromptTemplate.from_template(template=)".to_owned(),
                8
            ),
        ]
    );
}

#[test]
fn names_langchain_reads_as_f_strings_are_not_jinja() {
    let source = "QA_TEMPLATE = 'Reply as {{\"answer\": 1}}'\nSYS_PROMPT = '{{ x }}'\np = PromptTemplate(template=QA_TEMPLATE)\nc = ChatPromptTemplate.from_messages([('system', SYS_PROMPT)])\nJ_TEMPLATE = '{{ y }}'\nj = PromptTemplate.from_template(J_TEMPLATE, template_format='jinja2')\n";
    assert_eq!(keys(source), [("J_TEMPLATE".to_owned(), 5)]);
}

#[test]
fn langchain_chat_messages_in_jinja2_format() {
    let source = "c = ChatPromptTemplate.from_messages(\n    [\n        ('system', 'You help with {{ topic }}.'),\n        MessagesPlaceholder('history'),\n        ('human', '{{ question }}'),\n    ],\n    template_format='jinja2',\n)\nd = ChatPromptTemplate.from_messages([('human', '{{ q }}')])\n";
    let templates = jinja(source);
    let keys: Vec<&str> = templates.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "ChatPromptTemplate.from_messages([0])",
            "ChatPromptTemplate.from_messages([2])"
        ]
    );
    assert_eq!(templates[1].text, "{{ question }}");
    assert_eq!(templates[1].anchor_line, 1);
}

#[test]
fn haystack_prompt_builders() {
    let source = "DEFAULT_PROMPT_TEMPLATE = \"\"\"\nContext: {% for d in documents %}{{ d.content }}{% endfor %}\n\"\"\"\nbuilder = PromptBuilder(template=DEFAULT_PROMPT_TEMPLATE)\nother = PromptBuilder('{{ x }}', required_variables=['x'])\nchat = ChatPromptBuilder(\n    template=[\n        ChatMessage.from_system('You are {{ name }}.'),\n        ChatMessage.from_user(text='{{ query }}'),\n    ]\n)\n";
    assert_eq!(
        keys(source),
        [
            ("DEFAULT_PROMPT_TEMPLATE".to_owned(), 1),
            ("PromptBuilder()".to_owned(), 5),
            ("ChatPromptBuilder(template=[0])".to_owned(), 6),
            ("ChatPromptBuilder(template=[1])".to_owned(), 6),
        ]
    );
}

#[test]
fn dedent_in_its_spellings() {
    for call in ["dedent", "textwrap.dedent"] {
        let source = format!(
            "def f():\n    X_PROMPT = {call}(\"\"\"\n        Hello {{{{ name }}}}\n          indented\n\n        end\n        \"\"\")\n"
        );
        let template = only(&source);
        assert_eq!(template.text, "\nHello {{ name }}\n  indented\n\nend\n");
        assert_eq!(template.anchor_line, 2);
    }
}

#[test]
fn cleandoc_in_its_spellings() {
    for call in ["cleandoc", "inspect.cleandoc"] {
        let source = format!(
            "X_PROMPT = {call}('''  First {{{{ a }}}}\n\t  second\n        third\n\n    ''')\n"
        );
        let template = only(&source);
        assert_eq!(template.text, "First {{ a }}\n  second\nthird");
    }
}

#[test]
fn strip_and_combinations() {
    let cases = [
        ("'  {{ x }}\\n'.strip()", "{{ x }}"),
        ("'  {{ x }}\\n'.lstrip()", "{{ x }}\n"),
        ("'  {{ x }}\\n'.rstrip()", "  {{ x }}"),
        ("'\\n\\n{{ x }}\\n'.strip('\\n')", "{{ x }}"),
        ("'--{{ x }}-'.strip(None)", "--{{ x }}-"),
        ("dedent('''\n    {{ x }}\n    ''').strip()", "{{ x }}"),
        (
            "textwrap.dedent('''\n    {{ x }}\n  ''').lstrip('\\n')",
            "{{ x }}\n",
        ),
        (
            "(\n  '{{ a }}'\n  # a comment\n  \"{{ b }}\"\n)",
            "{{ a }}{{ b }}",
        ),
        ("'{{ a }}' 'b' r'\\c'", "{{ a }}b\\c"),
        ("('{{ a }}' + \"b\") + 'c'", "{{ a }}bc"),
        ("dedent('  {{ a }}\\n' + '  b')", "{{ a }}\nb"),
    ];
    for (expression, text) in cases {
        let source = format!("import textwrap\nSOME_PROMPT = {expression}\n");
        assert_eq!(only(&source).text, text, "{expression}");
    }
}

#[test]
fn unknown_calls_and_methods_have_no_value() {
    assert!(found("X_PROMPT = load('{{ x }}')\nY_PROMPT = '{{ y }}'.upper()\nZ_PROMPT = dedent('{{ z }}', 2)\n").is_empty());
}

#[test]
fn escapes_map_to_the_escape() {
    let source = "X_PROMPT = \"\\tHi {{ name }}\\n\\u00e9\\N{BULLET}\\\n!\"\n";
    let template = only(source);
    assert_eq!(template.text, "\tHi {{ name }}\n\u{e9}\u{2022}!");
    assert_eq!(template.map.host_offset(0), 12);
    assert_eq!(template.map.host_offset(1), 14);
    let e_acute = template.text.find('\u{e9}').expect("decoded");
    assert_eq!(&source[template.map.host_offset(e_acute)..][..6], "\\u00e9");
    assert_eq!(
        &source[template.map.host_offset(e_acute + 1)..][..6],
        "\\u00e9"
    );
}

#[test]
fn windows_line_breaks_read_as_newlines() {
    let source = "X_PROMPT = dedent(\"\"\"\r\n    a {{ b }}\r\n    c\r\n\"\"\")\r\nY = 1\r\n";
    let template = only(source);
    assert_eq!(template.text, "\na {{ b }}\nc\n");
    let newline = template.text.rfind('\n').expect("a newline");
    assert_eq!(&source[template.map.host_offset(newline)..][..2], "\r\n");
}

#[test]
fn formatted_and_byte_strings_are_not_jinja() {
    let source = "A_PROMPT = f'{{ {x} }}'\nB_PROMPT = b'{{ x }}'\nC_PROMPT = '{{ x }}' f'{y}'\nt = Template(f'{{{{ x }}}}')\n";
    assert!(jinja(source).is_empty());
}

#[test]
fn format_strings_are_not_jinja() {
    // Used with `.format` or `%`.
    let source = "A_PROMPT = 'Say {{ x }}'\nB_PROMPT = 'Say {{ y }}'\nC_PROMPT = '{{ z }} %s'\nprint(A_PROMPT.format(), dedent(B_PROMPT).format_map({}), C_PROMPT % 1)\n";
    assert!(jinja(source).is_empty());
    // Replacement fields, with `{{` escaping literal braces.
    assert!(jinja("JSON_PROMPT = 'Answer {question} as {{\"a\": 1}}'\n").is_empty());
    assert!(jinja("P_PROMPT = 'Answer {0} {} {q.a} {q[k]!r:>10} as {{x}}'\n").is_empty());
    // Tags win over a single brace, and a JSON example is not a field.
    assert_eq!(
        keys("A_PROMPT = '{% if x %}{y}{% endif %}'\nB_PROMPT = 'Return {\"a\": {{ a }}}'\n"),
        [("A_PROMPT".to_owned(), 1), ("B_PROMPT".to_owned(), 2)]
    );
    // A Jinja call says what it is.
    assert_eq!(only("t = Template('{q} {{ x }}')\n").text, "{q} {{ x }}");
}

#[test]
fn markup_and_sql_are_not_prompts() {
    let source = "HTML_TEMPLATE = '<b>{{ x }}</b>'\nsql_template = 'SELECT {{ c }}'\nPAGE_TEMPLATE = '''\n<!DOCTYPE html>{{ body }}'''\n";
    assert!(found(source).is_empty());
}

#[test]
fn text_without_jinja_markup_is_not_a_template() {
    assert!(found(
        "A_PROMPT = 'Hello'\nB_PROMPT = '{# note #}'\nt = Template('plain')\nx = '{{'\n"
    )
    .is_empty());
}

#[test]
fn syntax_errors_name_the_place() {
    let error = extract("X_PROMPT = '{{ x }}'\ndef f(:\n    pass\n").expect_err("invalid");
    assert_eq!(error.line, 2, "{error}");
    let error = extract("X_PROMPT = '{{ x }}\n").expect_err("unterminated");
    assert_eq!(error.line, 1, "{error}");
    let error = extract("t = Template('{{ x }}'\n").expect_err("unclosed call");
    assert!(error.line >= 1, "{error}");
}

#[test]
fn bad_escapes_in_a_template_literal_are_syntax_errors() {
    let error = extract("\nX_PROMPT = '{{ x }} \\x4'\n").expect_err("bad escape");
    assert_eq!((error.line, error.column), (2, 21));
    assert!(error.message.contains("truncated \\xXX escape"), "{error}");
}

#[test]
fn surrogates_have_no_utf8_text() {
    assert!(found("X_PROMPT = '{{ x }}\\ud800'\n").is_empty());
}

/// Runs `work` on a thread with a small stack, as a worker thread may have.
fn on_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(work)
        .expect("a thread")
        .join()
        .expect("no stack overflow")
}

#[test]
fn deep_brackets_are_refused_as_cpython_does() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}")] {
        let source = format!(
            "X_PROMPT = '{{{{ x }}}}'\ny = {}1{}\n",
            open.repeat(10_000),
            close.repeat(10_000)
        );
        let error = on_small_stack(move || extract(&source)).expect_err("too deep");
        assert_eq!(
            (error.line, error.column, error.message.as_str()),
            (2, 205, "too many nested parentheses")
        );
    }
    let source = format!(
        "X_PROMPT = '{{{{ x }}}}'\ny = {}1{}\n",
        "(".repeat(200),
        ")".repeat(200)
    );
    assert_eq!(
        on_small_stack(move || extract(&source)).map(|t| t.len()),
        Ok(1)
    );
}

#[test]
fn deep_expressions_without_brackets_do_not_overflow() {
    let strip_chain = format!(
        "X_PROMPT = '  {{{{ x }}}}  '{}\n",
        ".strip()".repeat(10_000)
    );
    let templates = on_small_stack(move || extract(&strip_chain)).expect("parses");
    assert_eq!(templates[0].text, "{{ x }}");

    let plus_chain = format!("X_PROMPT = '{{{{ x }}}}'{}\n", " + 'a'".repeat(10_000));
    let templates = on_small_stack(move || extract(&plus_chain)).expect("parses");
    assert_eq!(templates[0].text.len(), 7 + 10_000);

    let names: String = (0..10_000)
        .map(|i| format!("N{} = N{}\n", i + 1, i))
        .collect();
    let names = format!("N0 = '{{{{ x }}}}'\n{names}t = Template(N10000)\n");
    assert_eq!(
        on_small_stack(move || extract(&names)).map(|t| t.len()),
        Ok(0)
    );

    for deep in [
        format!("y = {}x\n", "-".repeat(10_000)),
        format!("y = {}x\n", "not ".repeat(10_000)),
        format!("y = {}x\n", "lambda: ".repeat(10_000)),
        format!("y = x{}\n", ".a".repeat(10_000)),
        format!("y = f{}\n", "()".repeat(10_000)),
        format!("y = {}x\n", "a if b else ".repeat(10_000)),
        format!("y = 1{}\n", " + 1".repeat(10_000)),
    ] {
        let source = format!("X_PROMPT = '{{{{ x }}}}'\n{deep}");
        let result = on_small_stack(move || extract(&source));
        assert!(result.is_ok(), "{:?}", result.err());
    }
}

#[test]
fn modern_python_syntax_parses() {
    let constructs = [
        "type Pair[T] = tuple[T, T]\n",
        "def first[T](items: list[T]) -> T:\n    return items[0]\n",
        "class Box[T]:\n    pass\n",
        "match command:\n    case {'action': 'go', **rest}:\n        pass\n    case [x, *_] if x:\n        pass\n    case _:\n        pass\n",
        "try:\n    pass\nexcept* ValueError as group:\n    pass\n",
        "if (n := len(items)) > 3:\n    pass\n",
        "async def main():\n    async with lock:\n        await run()\n    async for x in stream():\n        yield x\n",
        "@decorator(arg)\nclass A(B, metaclass=M):\n    x: int = 1\n",
        "with (open('a') as a, open('b') as b):\n    pass\n",
        "print(f'{value!r:>{width}} {x=}')\n",
        "print(f\"{'nested'} {d['key']}\")\n",
        "print(f\"{d[\"key\"]}\")\n",
        "print(f'{'same quotes'}')\n",
        "lam = lambda *args, **kwargs: (args, kwargs)\n",
        "x = [*a, *b]\ny = {**c, 'k': 1}\n",
        "def f(a, /, b, *, c):\n    return a\n",
        "global_value = 1_000_000 + 0x_FF + 1e-3j\n",
    ];
    for construct in constructs {
        let source = format!("X_PROMPT = '{{{{ x }}}}'\n{construct}");
        let result = extract(&source);
        assert!(result.is_ok(), "{construct}: {:?}", result.err());
    }
}

#[test]
fn edge_layouts_of_source() {
    // A backslash continuation between adjacent literals, and a form feed in indentation.
    let template = only("X_PROMPT = '{{ a }}' \\\n    '{{ b }}'\n\x0cY = 1\n");
    assert_eq!(template.text, "{{ a }}{{ b }}");
    // Tabs as indentation in a function.
    let template = only("def f():\n\tx_prompt = '{{ a }}'\n\treturn x_prompt\n");
    assert_eq!(template.anchor_line, 2);
}

#[test]
fn a_byte_order_mark_is_not_a_syntax_error() {
    let source = "\u{feff}X_PROMPT = '{{ a }}'\n";
    let template = only(source);
    assert_eq!(template.text, "{{ a }}");
    assert_eq!(
        template.map.host_offset(0),
        source.find("{{").expect("in the source")
    );
}

#[test]
fn langchain_prompts_in_their_default_format_are_var_templates() {
    let source = "SYSTEM_PROMPT = \"\"\"You are a travel agent. Today is {today}.\nPlan the user's trip below and return JSON: {{\"days\": []}}\"\"\"\nplan = PromptTemplate.from_template(SYSTEM_PROMPT)\nqa = PromptTemplate(template=\"Answer {question} from {docs}\", input_variables=[\"question\", \"docs\"])\nm = PromptTemplate(template=\"Hi {{name}}\", template_format=\"mustache\")\n";
    assert_eq!(
        formats(source),
        [
            ("SYSTEM_PROMPT".to_owned(), 1, TemplateFormat::Format),
            (
                "PromptTemplate(template=)".to_owned(),
                4,
                TemplateFormat::Format
            ),
            (
                "PromptTemplate(template=) (line 5)".to_owned(),
                5,
                TemplateFormat::Mustache
            ),
        ]
    );
}

#[test]
fn chat_messages_become_one_request_with_role_lines() {
    let source = "chat = ChatPromptTemplate.from_messages([\n    (\"system\", \"You are a support agent. Today is {date}.\"),\n    MessagesPlaceholder(\"history\"),\n    (\"human\", \"{question}\"),\n])\n";
    let template = only(source);
    assert_eq!(template.format, TemplateFormat::Format);
    assert_eq!(
        template.text,
        "system:\nYou are a support agent. Today is {date}.\n\nuser:\n{history}\n\nuser:\n{question}"
    );
    let at = template.text.find("{date}").unwrap();
    assert!(source[template.map.host_offset(at)..].starts_with("{date}"));
    assert_eq!(template.anchor_line, 1);
}

#[test]
fn formatted_constants_and_shapes_are_var_templates() {
    let source = "class Agent:\n    EXTRACT_PROMPT = \"Extract the facts from the text below. Return them as a list.\\n{text}\"\n    URL_TEMPLATE = \"https://{host}/api/{path}\"\n\n    def run(self, text):\n        return self.EXTRACT_PROMPT.format(text=text), self.URL_TEMPLATE.format(host=1, path=2)\n\nSUMMARY = \"You are a careful editor. Summarize the article below in three sentences for the reader: {article}\"\nout = SUMMARY.format(article=a)\nmsg = \"Error {code}: {reason}\".format(code=1, reason=2)\n";
    assert_eq!(
        formats(source),
        [
            ("Agent.EXTRACT_PROMPT".to_owned(), 2, TemplateFormat::Format),
            ("SUMMARY".to_owned(), 8, TemplateFormat::Format),
        ]
    );
}

#[test]
fn f_strings_where_prompts_are_built() {
    let source = "from datetime import datetime\n\ndef build_prompt(memories):\n    return f\"Today is {datetime.now():%Y-%m-%d}. Use these memories: {memories}\"\n\nSYSTEM_PROMPT = f\"You are {NAME}. \" \"Reply as {{json}}.\"\nmessages = [{\"role\": \"system\", \"content\": f\"Now: {time.time()}\"}]\nlog = f\"done {x}\"\nagent = Agent(instructions=f\"Help {user}\")\n";
    let found = formats(source);
    assert_eq!(
        found,
        [
            ("build_prompt()".to_owned(), 4, TemplateFormat::FString),
            ("SYSTEM_PROMPT".to_owned(), 6, TemplateFormat::FString),
            (
                "{\"role\": \"system\"}.content".to_owned(),
                7,
                TemplateFormat::FString
            ),
            (
                "Agent(instructions=)".to_owned(),
                9,
                TemplateFormat::FString
            ),
        ]
    );
    let templates = self::found(source);
    assert_eq!(
        templates[0].text,
        "Today is {datetime.now():%Y-%m-%d}. Use these memories: {memories}"
    );
    // The plain literal's braces are doubled: the text reads as one f-string.
    assert_eq!(templates[1].text, "You are {NAME}. Reply as {{{{json}}}}.");
    let at = templates[0].text.find("{datetime").unwrap();
    assert!(source[templates[0].map.host_offset(at)..].starts_with("{datetime.now()"));
}

#[test]
fn prompts_that_cannot_be_checked_are_reported() {
    let source = "from langchain import hub\nprompt = hub.pull(\"rlm/rag-prompt\")\nBASE_PROMPT = \"You are a bot.\"\nFULL_PROMPT = BASE_PROMPT + get_rules()\nQ_PROMPT = \"Answer %s now, as briefly as you can, to the user below.\"\nprint(Q_PROMPT % q)\np = PromptTemplate(template=\"x\", template_format=\"erb\")\n";
    let extracted = extract_all(source).unwrap();
    let unchecked: Vec<(usize, &str)> = extracted
        .unchecked
        .iter()
        .map(|u| (u.line, u.reason.as_str()))
        .collect();
    assert_eq!(unchecked.len(), 4, "{unchecked:#?}");
    assert!(unchecked[0].1.contains("hub.pull"));
    assert!(unchecked[1].1.contains("run time"));
    assert!(unchecked[2].1.contains("printf"));
    assert!(unchecked[3].1.contains("erb"));
}

#[test]
fn a_constant_in_a_chat_request_and_a_prompt_of_its_own_is_both() {
    let source = "GUARD_PROMPT = \"\"\"You check answers. Trace {trace_id}.\nReply PASS or FAIL.\"\"\"\nguard = PromptTemplate(template=GUARD_PROMPT)\nchat = ChatPromptTemplate.from_messages([(\"system\", GUARD_PROMPT), (\"user\", \"{q}\")])\nALONE_PROMPT = \"You answer {q}.\"\nonly_chat = ChatPromptTemplate.from_messages([(\"system\", ALONE_PROMPT)])\n";
    let keys: Vec<(String, usize)> = formats(source)
        .into_iter()
        .map(|(key, line, _)| (key, line))
        .collect();
    assert_eq!(
        keys,
        [
            ("GUARD_PROMPT".to_owned(), 1),
            ("ChatPromptTemplate.from_messages()".to_owned(), 4),
            ("ChatPromptTemplate.from_messages() (line 6)".to_owned(), 6),
        ]
    );
}

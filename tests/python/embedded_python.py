"""What Python itself computes for the templates in Python files (tests/it/python_host.rs).

usage: embedded_python.py FILE...

Runs each FILE as a module and prints JSON, one object per FILE:
  {"calls": [{"api": NAME, "text": TEXT}], "names": {NAME: [TEXT, ...]}}
- "calls": every template a Jinja consumer received, as the module passed it. jinja2 is the
  real package (Template and Environment.from_string are wrapped to record their source, and
  every recorded template is parsed by Jinja2). LangChain, Haystack and outlines are not in
  the test venv: small stand-ins record what their prompt classes receive (LangChain in
  every template_format: its default `{var}` format is checked too).
- "names": every str bound to a name while the module ran: module globals, class attributes
  (nested classes too), function locals when each function returns, and the attributes of
  `self` in those functions.
"""
import json
import sys
import types
from collections import defaultdict

import jinja2

calls = []


def record(api, text, template_format="jinja2"):
    if isinstance(text, str):
        calls.append({"api": api, "text": text, "format": template_format})


def wrap_jinja2():
    original_new = jinja2.Template.__new__
    original_from_string = jinja2.Environment.from_string
    depth = {"inside": 0}

    def template_new(cls, source, *args, **kwargs):
        record("jinja2.Template", source)
        depth["inside"] += 1
        try:
            return original_new(cls, source, *args, **kwargs)
        finally:
            depth["inside"] -= 1

    def from_string(self, source, *args, **kwargs):
        if not depth["inside"]:
            record("jinja2.Environment.from_string", source)
        return original_from_string(self, source, *args, **kwargs)

    jinja2.Template.__new__ = staticmethod(template_new)
    jinja2.Environment.from_string = from_string


def module(name, **members):
    made = types.ModuleType(name)
    made.__dict__.update(members)
    sys.modules[name] = made
    return made


def install_stand_ins():
    """Recording stand-ins for the prompt classes of packages the venv does not have."""

    def record_prompt(api, template, template_format):
        record(api, template, template_format)

    class PromptTemplate:
        def __init__(self, *, template, template_format="f-string", **_):
            record_prompt("PromptTemplate", template, template_format)

        @classmethod
        def from_template(cls, template, *, template_format="f-string", **_):
            record_prompt(cls.__name__ + ".from_template", template, template_format)
            return cls.__new__(cls)

    class SystemMessagePromptTemplate(PromptTemplate):
        pass

    class HumanMessagePromptTemplate(PromptTemplate):
        pass

    class MessagesPlaceholder:
        def __init__(self, variable_name, **_):
            self.variable_name = variable_name

    class ChatPromptTemplate:
        @classmethod
        def from_messages(cls, messages, template_format="f-string"):
            for message in messages:
                if isinstance(message, tuple):
                    record_prompt("ChatPromptTemplate.from_messages", message[1], template_format)
                elif isinstance(message, str):
                    record_prompt("ChatPromptTemplate.from_messages", message, template_format)
            return cls()

    prompts = dict(
        PromptTemplate=PromptTemplate,
        SystemMessagePromptTemplate=SystemMessagePromptTemplate,
        HumanMessagePromptTemplate=HumanMessagePromptTemplate,
        MessagesPlaceholder=MessagesPlaceholder,
        ChatPromptTemplate=ChatPromptTemplate,
    )
    module("langchain_core")
    module("langchain_core.prompts", **prompts)

    class ChatMessage:
        def __init__(self, role, text):
            self.role, self.text = role, text

        @classmethod
        def from_system(cls, text):
            return cls("system", text)

        @classmethod
        def from_user(cls, text):
            return cls("user", text)

        @classmethod
        def from_assistant(cls, text):
            return cls("assistant", text)

    class PromptBuilder:
        def __init__(self, template, required_variables=None, variables=None):
            record("PromptBuilder", template)

    class ChatPromptBuilder:
        def __init__(self, template=None, required_variables=None, variables=None):
            if isinstance(template, str):
                record("ChatPromptBuilder", template)
            for message in template or []:
                record("ChatPromptBuilder", message.text)

    module("haystack")
    module("haystack.components")
    module("haystack.components.builders", PromptBuilder=PromptBuilder, ChatPromptBuilder=ChatPromptBuilder)
    module("haystack.dataclasses", ChatMessage=ChatMessage)

    class OutlinesTemplate:
        @classmethod
        def from_string(cls, content, filters=None):
            record("outlines.Template.from_string", content)
            return cls()

    module("outlines", Template=OutlinesTemplate)


def strings(namespace, names):
    for name, value in list(namespace.items()):
        if isinstance(value, str):
            names[name].append(value)


def classes_of(namespace, module_name):
    pending = [v for v in namespace.values() if isinstance(v, type) and v.__module__ == module_name]
    seen = set()
    while pending:
        cls = pending.pop()
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        yield cls
        pending.extend(v for v in vars(cls).values() if isinstance(v, type))


def run(path):
    calls.clear()
    names = defaultdict(list)
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != path:
            return None
        if event == "return" and frame.f_code.co_name != "<module>":
            strings(frame.f_locals, names)
            owner = frame.f_locals.get("self")
            if owner is not None and hasattr(owner, "__dict__"):
                strings(vars(owner), names)
        return tracer

    module_name = "fixture_under_test"
    namespace = {"__name__": module_name, "__file__": path}
    sys.settrace(tracer)
    try:
        exec(code, namespace)
    finally:
        sys.settrace(None)
    strings(namespace, names)
    for cls in classes_of(namespace, module_name):
        strings(dict(vars(cls)), names)
    for call in calls:
        if call["format"] == "jinja2":
            jinja2.Environment().parse(call["text"])
    return {"calls": list(calls), "names": names}


def main():
    wrap_jinja2()
    install_stand_ins()
    print(json.dumps({path: run(path) for path in sys.argv[1:]}, ensure_ascii=False))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Chat-template references for kiln-llm's dev.kiln.llm.chat.ChatTemplate.

Renders conversations with transformers' own chat-template machinery
(transformers.utils.chat_template_utils.render_jinja_template: jinja2's ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True, loopcontrols, and transformers' tojson / raise_exception / strftime_now), offline.

The templates below are written from memory of the models' published tokenizer_config.json files (Llama 2 chat,
Llama 3 and 3.1 Instruct, Mistral 7B Instruct v0.1/v0.2, Qwen2.5 Instruct, SmolLM2 Instruct); no hub access is
used. They are faithful to those files as far as we recall them, not fetched copies; what the tests check is that
Kiln renders the same template text byte for byte as transformers does, so small differences from the published
files do not weaken the check. One extra template ("whitespace") exercises trim_blocks/lstrip_blocks without '-'
markers.

Writes one JSON file per template to kiln-llm/src/test/resources/chat/:
  {"name", "template", "bos_token", "eos_token",
   "cases": [{"name", "messages", "add_generation_prompt", "expected"} | {..., "error": message}]}

Run: python3 tools/golden/gen_chat_templates.py   (transformers 5.x, jinja2 3.x)
"""
import json
import os
import sys

import jinja2
import transformers
from transformers.utils.chat_template_utils import render_jinja_template

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "kiln-llm", "src", "test", "resources", "chat")

LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

LLAMA31 = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\\n\\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

MISTRAL = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)

QWEN25 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# trim_blocks / lstrip_blocks without '-' markers, a loop with loop.last, a namespace-free 'set', and tojson
WHITESPACE = """{% for message in messages %}
    {% if message['role'] == 'system' %}
[SYS] {{ message['content'] }}
    {% else %}
<{{ message['role'] | upper }}> {{ message['content'] }}{% if not loop.last %} |{% endif %}

    {% endif %}
{% endfor %}
{% if add_generation_prompt %}
<ASSISTANT>{% endif %}
json={{ messages[-1] | tojson }}
"""

# Python string methods templates call (str.startswith, .strip, .split, .upper, ...)
METHODS = """{% for message in messages %}
{% if message['content'].startswith(' ') or message.content.endswith('\n') %}[padded]{% endif %}
{{ message.role.upper() }}/{{ message.role.title() }}: {{ message.content.strip() }}|{{ message.content.lstrip() }}|{{ message.content.rstrip() }}|{{ message['content'].split() | length }}|{{ message.content.split('o') | join('0') }}|{{ '.lower() in a string' }}|{{ message.content.replace('e', 'E') }}
{% endfor %}
"""

TEMPLATES = {
    "llama2": (LLAMA2, "<s>", "</s>"),
    "llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
    "llama31": (LLAMA31, "<|begin_of_text|>", "<|eot_id|>"),
    "mistral": (MISTRAL, "<s>", "</s>"),
    "qwen25": (QWEN25, "", "<|im_end|>"),
    "smollm2": (SMOLLM2, "", "<|im_end|>"),
    "whitespace": (WHITESPACE, "<s>", "</s>"),
    "methods": (METHODS, "<s>", "</s>"),
}

def msg(role, content):
    return {"role": role, "content": content}

CONVERSATIONS = {
    "user": [msg("user", "Hello!")],
    "system_user": [msg("system", "You are a terse assistant."), msg("user", "What is 2+2?")],
    "multi_turn": [msg("system", "Be kind."), msg("user", "Hi"), msg("assistant", "Hello! How can I help?"),
                   msg("user", "Tell me a joke.")],
    "no_system_multi": [msg("user", "  padded question  "), msg("assistant", " an answer\n"), msg("user", "next")],
    "unicode": [msg("user", "Grüße aus Zürich — 你好，世界! 🦙 \"quotes\" and \\backslash\\ and <tags>"),
                msg("assistant", "Ça va? ✓ こんにちは"), msg("user", "emoji 👍🏽 and tabs\tand\nnewlines")],
    "bad_order": [msg("user", "one"), msg("user", "two")],
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (template, bos, eos) in TEMPLATES.items():
        cases = []
        for conv_name, conv in CONVERSATIONS.items():
            for agp in (True, False):
                case = {"name": f"{conv_name}/agp={str(agp).lower()}", "messages": conv, "add_generation_prompt": agp}
                try:
                    case["expected"] = render_jinja_template(
                        conversations=[conv], chat_template=template, add_generation_prompt=agp,
                        bos_token=bos, eos_token=eos)[0][0]
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = str(e)
                cases.append(case)
        doc = {"name": name, "generator": f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}",
               "template": template, "bos_token": bos, "eos_token": eos, "cases": cases}
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(name, sum("error" in c for c in cases), "errors of", len(cases), file=sys.stderr)


if __name__ == "__main__":
    main()

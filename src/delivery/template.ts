// The template that brings a person back when the WhatsApp window has closed: the tool's own
// `whatsapp_template`, or the hub-wide default. Parameter texts may use $result.message, $tool.name and
// $contact.name; a parameter written as a plain string is a text parameter.
import type { WhatsappTemplate } from "../tools/tool-file.js";
import type { TemplateMessage } from "./channel-port.js";
import { fillPlaceholders } from "../tools/placeholders.js";

export interface TemplateVariables {
  "result.message": string;
  "tool.name": string;
  "contact.name": string;
}

/** Each placeholder whole (`$result.messages` is not `$result.message`: a tool file that has it does not load). */
function fill(text: string, vars: TemplateVariables): string {
  return fillPlaceholders(text, (namespace, name) =>
    name === undefined ? undefined : (vars as unknown as Record<string, string | undefined>)[`${namespace}.${name}`],
  );
}

/** `header`: the file header of a template that has one (template-header.ts), first among the components. */
export function renderTemplate(
  template: WhatsappTemplate,
  vars: TemplateVariables,
  header?: Record<string, unknown>,
): TemplateMessage {
  const rendered = renderComponents(template, vars);
  if (!header) return rendered;
  return { ...rendered, components: [header, ...(rendered.components ?? [])] };
}

function renderComponents(template: WhatsappTemplate, vars: TemplateVariables): TemplateMessage {
  return {
    name: template.name,
    language: template.language,
    ...(template.components
      ? {
          components: template.components.map((component) => ({
            ...component,
            ...(component.parameters
              ? {
                  parameters: component.parameters.map((parameter) =>
                    typeof parameter === "string"
                      ? { type: "text", text: fill(parameter, vars) }
                      : { ...parameter, text: fill(parameter.text, vars) },
                  ),
                }
              : {}),
          })),
        }
      : {}),
  };
}

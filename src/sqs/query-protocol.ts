import { SQS_ERRORS, faultOf, type SqsError } from "./errors";

/**
 * The older SQS query protocol, which SDKs released before late 2023 and some tools still send: a
 * form-encoded body with `Action=<Operation>` and flattened members (`Attribute.1.Name`,
 * `SendMessageBatchRequestEntry.2.MessageBody`, …), answered in XML. It is translated into the JSON
 * protocol's input, run by the same operation, and its JSON output rendered back as SQS's XML — one set
 * of operations serves both.
 */

const XMLNS = "http://queue.amazonaws.com/doc/2012-11-05/";

/** Members that are numbers in the JSON protocol (the query protocol sends every value as text). */
const NUMERIC = new Set(["DelaySeconds", "MaxNumberOfMessages", "VisibilityTimeout", "WaitTimeSeconds", "MaxResults"]);

/** Flattened lists and maps of the query protocol, by their member name: [JSON name, shape]. */
const COLLECTIONS: Record<string, [string, "list" | "attributes" | "messageAttributes" | "tags" | "entries"]> = {
  AttributeName: ["AttributeNames", "list"],
  MessageAttributeName: ["MessageAttributeNames", "list"],
  MessageSystemAttributeName: ["MessageSystemAttributeNames", "list"],
  Attribute: ["Attributes", "attributes"],
  MessageAttribute: ["MessageAttributes", "messageAttributes"],
  SendMessageBatchRequestEntry: ["Entries", "entries"],
  DeleteMessageBatchRequestEntry: ["Entries", "entries"],
  ChangeMessageVisibilityBatchRequestEntry: ["Entries", "entries"],
  Tag: ["Tags", "tags"],
  TagKey: ["TagKeys", "list"],
};

/** Members the JSON protocol names differently for one operation: CreateQueue's tags are `tags` (lower
 * case, as the SQS API model has it), TagQueue's are `Tags`; both are `Tag.N.Key` / `Tag.N.Value` here. */
const JSON_NAME_BY_ACTION: Record<string, Record<string, string>> = { CreateQueue: { Tags: "tags" } };

type Tree = { [key: string]: Tree | string };

/** `a.1.b=x` -> { a: { 1: { b: "x" } } }. */
function unflatten(pairs: Iterable<[string, string]>): Tree {
  const root: Tree = {};
  for (const [key, value] of pairs) {
    const parts = key.split(".");
    let node = root;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else {
        const next = node[part];
        node = typeof next === "object" ? next : (node[part] = {});
      }
    });
  }
  return root;
}

/** The numbered items of a flattened list, in index order. */
function items(node: Tree | string): Tree[] {
  if (typeof node !== "object") return [];
  return Object.keys(node)
    .filter((k) => /^\d+$/.test(k))
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => node[k])
    .filter((v): v is Tree => typeof v === "object");
}

function listValues(node: Tree | string): string[] {
  if (typeof node !== "object") return [];
  return Object.keys(node)
    .filter((k) => /^\d+$/.test(k))
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => node[k])
    .filter((v): v is string => typeof v === "string");
}

/** A query-protocol member tree as the JSON protocol's input of `action`. */
function toInput(tree: Tree, action: string): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(tree)) {
    const collection = COLLECTIONS[key];
    if (!collection) {
      if (typeof node === "string") input[key] = NUMERIC.has(key) && /^-?\d+$/.test(node) ? Number(node) : node;
      continue;
    }
    const [jsonName, shape] = collection;
    const name = JSON_NAME_BY_ACTION[action]?.[jsonName] ?? jsonName;
    if (shape === "list") input[name] = listValues(node);
    else if (shape === "attributes") {
      input[name] = Object.fromEntries(items(node).map((i) => [String(i.Name ?? ""), String(i.Value ?? "")]));
    } else if (shape === "messageAttributes") {
      input[name] = Object.fromEntries(
        items(node).map((i) => [String(i.Name ?? ""), typeof i.Value === "object" ? { ...i.Value } : {}]),
      );
    } else if (shape === "tags") {
      input[name] = Object.fromEntries(items(node).map((i) => [String(i.Key ?? ""), String(i.Value ?? "")]));
    } else input[name] = items(node).map((entry) => toInput(entry, action));
  }
  return input;
}

/**
 * The operation and its JSON-protocol input from a query-protocol body.
 *
 * @example
 * queryRequest("Action=SendMessage&MessageBody=hi&QueueUrl=...") // { action: "SendMessage", input: { MessageBody: "hi", QueueUrl: "..." } }
 */
export function queryRequest(body: string): { action: string; input: Record<string, unknown> } {
  const params = new URLSearchParams(body);
  const action = params.get("Action") ?? "";
  params.delete("Action");
  params.delete("Version");
  return { action, input: toInput(unflatten(params), action) };
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", "'": "apos", '"': "quot" }[c]};`);
}

const element = (name: string, content: string) => `<${name}>${content}</${name}>`;

/** A JSON value as the query protocol's XML members. */
function toXml(key: string, value: unknown, action: string): string {
  if (value === undefined || value === null) return "";
  if (key === "QueueUrls") return (value as string[]).map((u) => element("QueueUrl", escapeXml(u))).join("");
  if (key === "Messages") return (value as unknown[]).map((m) => element("Message", fields(m, action))).join("");
  if (key === "Successful") {
    return (value as unknown[]).map((e) => element(`${action}ResultEntry`, fields(e, action))).join("");
  }
  if (key === "Failed")
    return (value as unknown[]).map((e) => element("BatchResultErrorEntry", fields(e, action))).join("");
  if (key === "Attributes") {
    return Object.entries(value as Record<string, string>)
      .map(([name, v]) => element("Attribute", element("Name", escapeXml(name)) + element("Value", escapeXml(v))))
      .join("");
  }
  if (key === "Tags") {
    return Object.entries(value as Record<string, string>)
      .map(([name, v]) => element("Tag", element("Key", escapeXml(name)) + element("Value", escapeXml(v))))
      .join("");
  }
  if (key === "MessageAttributes") {
    return Object.entries(value as Record<string, Record<string, string>>)
      .map(([name, v]) =>
        element("MessageAttribute", element("Name", escapeXml(name)) + element("Value", fields(v, action))),
      )
      .join("");
  }
  if (typeof value === "object") return element(key, fields(value, action));
  return element(key, escapeXml(String(value)));
}

function fields(value: unknown, action: string): string {
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => toXml(k, v, action))
    .join("");
}

/** An operation's JSON output as the query protocol's XML response. */
export function queryResponse(action: string, output: Record<string, unknown>, requestId: string): Response {
  const xml =
    `<?xml version="1.0"?><${action}Response xmlns="${XMLNS}">` +
    element(`${action}Result`, fields(output, action)) +
    element("ResponseMetadata", element("RequestId", requestId)) +
    `</${action}Response>`;
  return new Response(xml, { status: 200, headers: { "Content-Type": "text/xml", "x-amzn-RequestId": requestId } });
}

/** An error as the query protocol's XML ErrorResponse, with the legacy code (AWS.SimpleQueueService.*). */
export function queryErrorResponse(error: SqsError, requestId: string): Response {
  const entry = SQS_ERRORS[error.code];
  const xml =
    `<?xml version="1.0"?><ErrorResponse xmlns="${XMLNS}">` +
    element(
      "Error",
      element("Type", faultOf(error.code)) +
        element("Code", entry.query) +
        element("Message", escapeXml(error.message)) +
        "<Detail/>",
    ) +
    element("RequestId", requestId) +
    "</ErrorResponse>";
  return new Response(xml, {
    status: entry.status,
    headers: { "Content-Type": "text/xml", "x-amzn-RequestId": requestId },
  });
}

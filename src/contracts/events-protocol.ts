/**
 * The events WebSocket's subprotocols, for the Worker and the dashboard's browser code alike (this module
 * imports nothing, so the browser bundle can take it in).
 */

/** The subprotocol a browser offers next to its ticket; the server answers with it. */
export const EVENTS_PROTOCOL = "edgeq.events.v1";

/** A browser offers its ticket as the subprotocol `edgeq.ticket.<ticket>` (next to EVENTS_PROTOCOL): it
 * cannot set Authorization on a WebSocket, and a ticket in a URL gets logged. */
export const TICKET_PROTOCOL_PREFIX = "edgeq.ticket.";

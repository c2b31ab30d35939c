import { changeMessageVisibility, changeMessageVisibilityBatch } from "./change-visibility";
import type { SqsOperation } from "./context";
import { deleteMessage, deleteMessageBatch } from "./delete-message";
import {
  createQueue,
  deleteQueue,
  getQueueAttributes,
  getQueueUrl,
  listQueues,
  purgeQueue,
  setQueueAttributes,
} from "./queue-operations";
import { listQueueTags, tagQueue, untagQueue } from "./queue-tags";
import { receiveMessage } from "./receive-message";
import { sendMessage, sendMessageBatch } from "./send-message";

/** Every SQS operation the endpoint serves, by the name in `X-Amz-Target: AmazonSQS.<name>`. */
export const SQS_OPERATIONS: Readonly<Record<string, SqsOperation>> = {
  CreateQueue: createQueue,
  GetQueueUrl: getQueueUrl,
  ListQueues: listQueues,
  DeleteQueue: deleteQueue,
  PurgeQueue: purgeQueue,
  GetQueueAttributes: getQueueAttributes,
  SetQueueAttributes: setQueueAttributes,
  TagQueue: tagQueue,
  UntagQueue: untagQueue,
  ListQueueTags: listQueueTags,
  SendMessage: sendMessage,
  SendMessageBatch: sendMessageBatch,
  ReceiveMessage: receiveMessage,
  DeleteMessage: deleteMessage,
  DeleteMessageBatch: deleteMessageBatch,
  ChangeMessageVisibility: changeMessageVisibility,
  ChangeMessageVisibilityBatch: changeMessageVisibilityBatch,
};

ALTER TABLE `queues` ADD `sqs_delay_s` integer;--> statement-breakpoint
ALTER TABLE `queues` ADD `sqs_receive_wait_s` integer;
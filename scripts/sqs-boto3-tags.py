# boto3 tag_queue / untag_queue / list_queue_tags against edgeq's SQS endpoint, with npm start's development credentials.
# boto3 does not come from npm, so this is not part of npm test: Debian's python3-boto3 (1.26.27) ran it
# against `npm start` with EDGEQ_URL=http://127.0.0.1:8787 python3 scripts/sqs-boto3-tags.py (docs/sqs.md).
import os, boto3
sqs = boto3.client("sqs", endpoint_url=os.environ["EDGEQ_URL"], region_name="us-east-1",
                   aws_access_key_id="EDGEQDEVACCESSKEY", aws_secret_access_key="edgeq-dev-secret-access-key")
url = sqs.create_queue(QueueName="boto3-tags-check", tags={"team": "media"})["QueueUrl"]
print("created", url)
print("after create:", sqs.list_queue_tags(QueueUrl=url).get("Tags"))
sqs.tag_queue(QueueUrl=url, Tags={"env": "dev", "cost-center": "42"})
print("after tag:", sqs.list_queue_tags(QueueUrl=url).get("Tags"))
sqs.untag_queue(QueueUrl=url, TagKeys=["team"])
print("after untag:", sqs.list_queue_tags(QueueUrl=url).get("Tags"))
try:
    sqs.tag_queue(QueueUrl=url, Tags={"aws:reserved": "x"})
except Exception as e:
    print("refused:", type(e).__name__, str(e)[:160])

"""A rate() schedule's anchor is read once and then refreshed in the background: a page shows
the anchor it knows at once, and the refreshed one once the refresh has ended."""

from __future__ import annotations

from datetime import datetime, timezone

import boto3
from moto import mock_aws

from jobplane.platform.anchors import ScheduleAnchors

TARGET = {"Arn": "arn:aws:states:us-east-1:123456789012:stateMachine:jp-x",
          "RoleArn": "arn:aws:iam::123456789012:role/jp-x-schedule"}


def test_a_known_anchor_is_shown_at_once_and_refreshed_in_the_background() -> None:
    with mock_aws():
        scheduler = boto3.client("scheduler", region_name="us-east-1")
        scheduler.create_schedule_group(Name="jp")
        scheduler.create_schedule(Name="jp-x", GroupName="jp", ScheduleExpression="rate(15 minutes)", Target=TARGET,
                                  FlexibleTimeWindow={"Mode": "OFF"})
        created = scheduler.get_schedule(Name="jp-x", GroupName="jp")["CreationDate"]
        anchors = ScheduleAnchors(scheduler, "jp", max_age=0.0)  # every later read finds it stale
        assert anchors.get("jp-x") == created
        assert anchors.get("jp-missing") is None  # no such schedule: no anchor, asked once

        # the schedule is created again, starting at a given time: a new anchor
        scheduler.delete_schedule(Name="jp-x", GroupName="jp")
        start = datetime(2030, 1, 1, 0, 7, tzinfo=timezone.utc)
        scheduler.create_schedule(Name="jp-x", GroupName="jp", ScheduleExpression="rate(15 minutes)", Target=TARGET,
                                  FlexibleTimeWindow={"Mode": "OFF"}, StartDate=start)
        assert anchors.get("jp-x") == created  # what it knew, without waiting for the refresh it started
        anchors.settle()
        assert anchors.get("jp-x") == start

        # a refresh that fails keeps the known anchor
        scheduler.delete_schedule_group(Name="jp")
        # a client of an endpoint where nothing listens (outside moto): its refresh fails
        denied = ScheduleAnchors(boto3.client("scheduler", region_name="us-east-1", endpoint_url="http://127.0.0.1:9"),
                                 "jp", max_age=0.0)
        denied._known["jp-x"] = (0.0, start)
        assert denied.get("jp-x") == start
        denied.settle()
        assert denied.get("jp-x") == start
        denied.settle()

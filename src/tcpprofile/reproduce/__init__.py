"""`tcpprofile reproduce`: compact versions of the papers' campaigns (campaigns.py) and their findings
checked on the data, each with a statistic, an interval and a verdict (findings.py, stats.py)."""

#!/usr/bin/perl
# A client generated at run time from grantd's OpenAPI document by Debian's OpenAPI::Client
# (libopenapi-client-perl), for test/openapi/generators.test.ts: it validates each request against
# the document (patterns included) before sending it, and prints what grantd answered as JSON.
# Usage: perl-client.pl <openapi.json> <base URL> <API key> <namespace>
use strict;
use warnings;
use JSON::PP ();
use OpenAPI::Client;

my @warnings;
local $SIG{__WARN__} = sub { push @warnings, @_ };

my ($document, $base_url, $key, $namespace) = @ARGV;
my $grantd = OpenAPI::Client->new("file://$document", base_url => $base_url);
$grantd->ua->on(start => sub { $_[1]->req->headers->authorization("Bearer $key") });

# Each call's status, whether it reached grantd (its X-Request-Id), and its JSON body.
sub answer {
  my ($tx) = @_;
  return { status => 0 + $tx->res->code, reached => defined $tx->res->headers->header('X-Request-Id') ? \1 : \0, body => $tx->res->json };
}

my $object = "$namespace:q3";
my %result = (
  namespace => answer($grantd->namespacesCreate({ body => { name => $namespace, relations => { owner => {}, viewer => { includes => ['owner'] } } } })),
  grant => answer($grantd->grantsCreate({ body => { subject => 'user:alice', relation => 'owner', object => $object } })),
  alice => answer($grantd->check({ body => { subject => 'user:alice', relation => 'viewer', object => $object } })),
  bob => answer($grantd->check({ body => { subject => 'user:bob', relation => 'viewer', object => $object } })),
  objects => answer($grantd->objectsList({ namespace => $namespace, subject => 'user:alice', relation => 'viewer', limit => 10 })),
  agent => answer($grantd->agentsCreate({ body => { external_id => 'perl-bot', display_name => 'Perl bot', owner => 'user:alice', scope => ["$namespace:viewer"] } })),
  fetched => answer($grantd->agentsGet({ external_id => 'perl-bot' })),
  key => answer($grantd->keysCreate({ body => { label => 'perl', scopes => ['check:read'] } })),
  unknown => answer($grantd->check({ body => { subject => 'user:alice', relation => 'viewer', object => 'nowhere:x' } })),
  malformed => answer($grantd->check({ body => { subject => 'alice', relation => 'viewer', object => $object } })),
);
$result{warnings} = \@warnings;
print JSON::PP->new->canonical->encode(\%result), "\n";

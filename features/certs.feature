@certs
Feature: Webhook certificates never cause a failed admission
  In the default "auto" certificate mode the operator makes a CA and a serving certificate, keeps them in the
  Secret dynamo-operator-webhook-cert (the chart's <release>-dynamo-operator-webhook-cert), injects the CA bundle into its webhook configurations and keeps it
  there, and renews the certificate before it expires. The webhook server picks up a renewed certificate
  without a restart. (With --webhook-cert-mode=cert-manager or external, the operator serves the Secret it
  is given and leaves the CA bundle to cert-manager or the installer.)

  Scenario: The API server trusts the operator's serving certificate
    Then every webhook of the operator's configurations trusts the CA of its certificate Secret

  Scenario: A CA bundle edited away is restored, and admission keeps working
    When I remove the CA bundle from the operator's webhook configurations
    Then every webhook of the operator's configurations eventually trusts the CA of its certificate Secret
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          My_Worker:
            componentType: worker
      """
    Then it is rejected with a message containing "admission webhook \"validate.dynamographdeployments.nvidia.com\" denied the request"

  Scenario: A certificate about to expire is renewed with no failed admission
    Given I keep sending admission requests
    When the serving certificate in the operator's certificate Secret is about to expire
    Then the serving certificate in the operator's certificate Secret is eventually renewed for at least 60 minutes
    And every webhook of the operator's configurations trusts the CA of its certificate Secret
    And no admission request has failed

package dev.kiln.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.SparkSessionExtensionsProvider;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Kiln's Spark SQL extension: an analysis check of every {@link KilnFunctions kiln_predict} call, so a call whose
 * arguments cannot feed the model fails when the query is analysed, naming the argument and the model input. Spark
 * loads it by itself in every session built while kiln-spark is on the driver's class path (it is listed in
 * {@code META-INF/services/org.apache.spark.sql.SparkSessionExtensionsProvider}); naming it in
 * {@code spark.sql.extensions} is the same.
 */
public final class KilnSparkExtensions implements SparkSessionExtensionsProvider {
    /** The extension (Spark's ServiceLoader and {@code spark.sql.extensions} instantiate it). */
    public KilnSparkExtensions() {}

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectCheckRule(session -> {
            RegisteredFunctions.installIn(session);
            return (Function1<LogicalPlan, BoxedUnit>) plan -> {
                RegisteredFunctions.check(session, plan);
                return BoxedUnit.UNIT;
            };
        });
        return BoxedUnit.UNIT;
    }
}

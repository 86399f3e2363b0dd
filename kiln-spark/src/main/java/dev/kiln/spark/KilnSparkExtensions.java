package dev.kiln.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.SparkSessionExtensionsProvider;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Kiln's Spark SQL extension: an analysis check of every call of a {@link KilnFunctions Kiln function}, so a
 * {@code kiln_predict} call whose arguments cannot feed the model fails when the query is analysed, naming the argument
 * and the model input, and a {@code kiln_generate} call with a prompt that is not a string, or options of an unknown name,
 * a wrong type or (when constant) a value out of range, fails naming the argument and the option. Spark
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
